/* ----------------------------------------------------------------------
   LAMMPS - Large-scale Atomic/Molecular Massively Parallel Simulator
   https://www.lammps.org/, Sandia National Laboratories
   LAMMPS development team: developers@lammps.org

   This software is distributed under the GNU General Public License.
   See the README file in the top-level LAMMPS directory.
------------------------------------------------------------------------- */

/* ----------------------------------------------------------------------
   fix nvalchemi/dd: DomainParallel-style hooks (LOCAL, GLOBAL and
   RANK_ZERO scopes), domain statistics and in-run validation against the
   single-process reference (USER-NVALCHEMI package).
------------------------------------------------------------------------- */

#include "fix_nvalchemi_dd.h"

#include "atom.h"
#include "comm.h"
#include "compute.h"
#include "domain.h"
#include "error.h"
#include "force.h"
#include "memory.h"
#include "modify.h"
#include "pair_nvalchemi.h"
#include "update.h"

#include "nvalchemi_consolidate.h"
#include "nvalchemi_device.h"
#include "nvalchemi_drift.h"
#include "nvalchemi_extxyz.h"
#include "nvalchemi_gather.h"
#include "nvalchemi_guard.h"
#include "nvalchemi_hook.h"
#include "nvalchemi_lammps.h"
#include "nvalchemi_reference.h"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <memory>
#include <string>
#include <vector>

using namespace LAMMPS_NS;
using namespace FixConst;
using NVAlchemi::HookScope;
using NVAlchemi::HookStage;

namespace {
// the global vector f_ID[1..]: names only for the doc and the bounds check
enum Stat {
  OWNED_MIN,
  OWNED_MAX,
  OWNED_MEAN,
  IMBALANCE,
  GHOSTS,
  EDGES,
  OWNER_CHANGES,
  MODEL_TIME,
  GLUE_TIME,
  EXCHANGE_TIME,
  DRIFT,
  VALIDATE_DIFFERENCE,
  CLAMPED,
  GRAPH_TIME,
  TENSORS_TIME,
  FORWARD_TIME,
  BACKWARD_TIME,
  TALLY_TIME,
  NUM_STATS
};

// atoms reported by name in a guard error, per rank
constexpr int GUARD_REPORTED = 8;
}    // namespace

struct FixNVAlchemiDD::Impl {
  // settings; an interval of 0 turns the feature off
  int guard_every = 0;
  double max_force = 0.0;    // 0: no threshold
  bool clamp = false;        // above max_force: clamp (true) or stop (false)
  int drift_every = 0, drift_window = 0;
  double drift_tolerance = 0.0;
  bool drift_stops = false;
  int validate_every = 0;
  double validate_tolerance = 0.0;
  int snapshot_every = 0;
  std::string snapshot_file;
  FILE *snapshot = nullptr;    // rank 0
  int hook_every = 0;
  std::unique_ptr<NVAlchemi::HookRunner> hook;

  // what the features use
  std::vector<PairNVAlchemi *> models;    // every pair_style nvalchemi instance
  Compute *pe = nullptr;                  // thermo_pe, for drift and snapshots

  // state
  bigint owner_changes = 0;    // on this rank at the last count
  double stats[NUM_STATS] = {};
  bigint stats_step = -1;
  bigint hook_step = -1;    // step the hook energy belongs to
  double hook_energy = 0.0;
  bigint clamped = 0;
  bool clamp_warned = false;
  NVAlchemi::DriftFit drift;
  bool drift_warned = false;
  int validations = 0;
  double validate_difference = 0.0;    // largest relative difference of the last validation

  bool hook_at(HookStage stage) const { return hook && hook->stage() == stage; }

  ~Impl()
  {
    if (snapshot) fclose(snapshot);
  }
};

/* ----------------------------------------------------------------------
   fix ID group nvalchemi/dd [guard N] [maxforce F clamp|abort]
     [drift N window tolerance warn|error] [validate N tolerance]
     [snapshot N file] [hook file.pt local|global|rank_zero N]
     [stage before_step|before_compute|after_compute|after_step]
------------------------------------------------------------------------- */

FixNVAlchemiDD::FixNVAlchemiDD(LAMMPS *lmp, int narg, char **arg) :
    Fix(lmp, narg, arg), impl(new Impl), owner(nullptr)
{
  vector_flag = 1;
  size_vector = NUM_STATS;
  global_freq = 1;
  extvector = 0;
  restart_global = 1;
  restart_peratom = 1;

  Impl &h = *impl;
  bool stage_given = false;
  std::string hook_file;
  HookScope hook_scope = HookScope::LOCAL;
  HookStage hook_stage = HookStage::AFTER_COMPUTE;
  int iarg = 3;
  const auto need = [&](int n, const char *keyword) {
    if (iarg + n >= narg)
      utils::missing_cmd_args(FLERR, std::string("fix nvalchemi/dd ") + keyword, error);
  };
  const auto interval = [&](int offset) {
    const int n = utils::inumeric(FLERR, arg[iarg + offset], false, lmp);
    if (n <= 0)
      error->all(FLERR, iarg + offset, "fix nvalchemi/dd {}: the interval must be > 0, got {}",
                 arg[iarg], n);
    return n;
  };
  while (iarg < narg) {
    const std::string keyword = arg[iarg];
    if (keyword == "guard") {
      need(1, "guard");
      h.guard_every = interval(1);
      iarg += 2;
    } else if (keyword == "maxforce") {
      need(2, "maxforce");
      h.max_force = utils::numeric(FLERR, arg[iarg + 1], false, lmp);
      if (h.max_force <= 0.0)
        error->all(FLERR, iarg + 1, "fix nvalchemi/dd maxforce must be > 0, got {}", arg[iarg + 1]);
      const std::string action = arg[iarg + 2];
      if (action != "clamp" && action != "abort")
        error->all(FLERR, iarg + 2,
                   "fix nvalchemi/dd maxforce action must be clamp or abort, got {}", action);
      h.clamp = action == "clamp";
      iarg += 3;
    } else if (keyword == "drift") {
      need(4, "drift");
      h.drift_every = interval(1);
      h.drift_window = utils::inumeric(FLERR, arg[iarg + 2], false, lmp);
      if (h.drift_window < 2)
        error->all(FLERR, iarg + 2, "fix nvalchemi/dd drift window must be >= 2 samples, got {}",
                   h.drift_window);
      h.drift_tolerance = utils::numeric(FLERR, arg[iarg + 3], false, lmp);
      if (h.drift_tolerance <= 0.0)
        error->all(FLERR, iarg + 3, "fix nvalchemi/dd drift tolerance must be > 0");
      const std::string action = arg[iarg + 4];
      if (action != "warn" && action != "error")
        error->all(FLERR, iarg + 4, "fix nvalchemi/dd drift action must be warn or error, got {}",
                   action);
      h.drift_stops = action == "error";
      iarg += 5;
    } else if (keyword == "validate") {
      need(2, "validate");
      h.validate_every = interval(1);
      h.validate_tolerance = utils::numeric(FLERR, arg[iarg + 2], false, lmp);
      if (h.validate_tolerance <= 0.0)
        error->all(FLERR, iarg + 2, "fix nvalchemi/dd validate tolerance must be > 0");
      iarg += 3;
    } else if (keyword == "snapshot") {
      need(2, "snapshot");
      h.snapshot_every = interval(1);
      h.snapshot_file = arg[iarg + 2];
      iarg += 3;
    } else if (keyword == "hook") {
      need(3, "hook");
      hook_file = arg[iarg + 1];
      const std::string scope = arg[iarg + 2];
      const auto *found = std::find(std::begin(NVAlchemi::HOOK_SCOPE_NAMES),
                                    std::end(NVAlchemi::HOOK_SCOPE_NAMES), scope);
      if (found == std::end(NVAlchemi::HOOK_SCOPE_NAMES))
        error->all(FLERR, iarg + 2,
                   "fix nvalchemi/dd hook scope must be local, global or rank_zero, got {}", scope);
      hook_scope = static_cast<HookScope>(found - std::begin(NVAlchemi::HOOK_SCOPE_NAMES));
      iarg += 3;
      h.hook_every = interval(0);
      iarg += 1;
    } else if (keyword == "stage") {
      need(1, "stage");
      const std::string stage = arg[iarg + 1];
      const auto *found = std::find(std::begin(NVAlchemi::HOOK_STAGE_NAMES),
                                    std::end(NVAlchemi::HOOK_STAGE_NAMES), stage);
      if (found == std::end(NVAlchemi::HOOK_STAGE_NAMES))
        error->all(FLERR, iarg + 1,
                   "fix nvalchemi/dd stage must be before_step, before_compute, after_compute or "
                   "after_step, got {}",
                   stage);
      hook_stage = static_cast<HookStage>(found - std::begin(NVAlchemi::HOOK_STAGE_NAMES));
      stage_given = true;
      iarg += 2;
    } else {
      error->all(FLERR, iarg, "Unknown fix nvalchemi/dd keyword: {}", keyword);
    }
  }
  if (stage_given && hook_file.empty())
    error->all(FLERR, "fix nvalchemi/dd stage sets where the hook runs: it needs the hook keyword");
  if (h.max_force > 0.0 && h.guard_every == 0)
    error->all(FLERR, "fix nvalchemi/dd maxforce needs the guard keyword (guard N)");
  if (h.drift_every) h.drift.set_window(h.drift_window);

  if (!hook_file.empty()) {
    h.hook = std::make_unique<NVAlchemi::HookRunner>(lmp, hook_file, hook_scope, hook_stage);
    scalar_flag = 1;
    extscalar = 1;
    energy_global_flag = 1;
    virial_global_flag = 1;
  }

  if (h.snapshot_every && comm->me == 0) {
    h.snapshot = fopen(h.snapshot_file.c_str(), "w");
    if (!h.snapshot)
      error->one(FLERR, "Cannot open fix nvalchemi/dd snapshot file {}: {}", h.snapshot_file,
                 utils::getsyserror());
  }

  FixNVAlchemiDD::grow_arrays(atom->nmax);
  atom->add_callback(Atom::GROW);
  atom->add_callback(Atom::RESTART);
  for (int i = 0; i < atom->nlocal; ++i) owner[i] = comm->me;
}

/* ---------------------------------------------------------------------- */

FixNVAlchemiDD::~FixNVAlchemiDD()
{
  atom->delete_callback(id, Atom::GROW);
  atom->delete_callback(id, Atom::RESTART);
  memory->destroy(owner);
  delete impl;
}

/* ---------------------------------------------------------------------- */

int FixNVAlchemiDD::setmask()
{
  int mask = POST_FORCE | MIN_POST_FORCE | END_OF_STEP | POST_RUN;
  if (impl->hook_at(HookStage::BEFORE_STEP)) mask |= INITIAL_INTEGRATE;
  if (impl->hook_at(HookStage::BEFORE_COMPUTE)) mask |= PRE_FORCE | MIN_PRE_FORCE;
  return mask;
}

/* ---------------------------------------------------------------------- */

void FixNVAlchemiDD::init()
{
  Impl &h = *impl;
  if (utils::strmatch(update->integrate_style, "^respa"))
    error->all(FLERR, Error::NOLASTLINE, "Fix nvalchemi/dd does not support run_style respa");
  const HookStage stage = h.hook ? h.hook->stage() : HookStage::AFTER_COMPUTE;
  if ((thermo_energy || thermo_virial) && !NVAlchemi::stage_adds_forces(stage))
    error->all(FLERR, Error::NOLASTLINE,
               "fix_modify energy or virial with fix nvalchemi/dd needs the hook at stage "
               "before_compute or after_compute (it is at {})",
               NVAlchemi::HOOK_STAGE_NAMES[static_cast<int>(stage)]);

  h.models.clear();
  for (int n = 1;; ++n) {
    auto *model = dynamic_cast<PairNVAlchemi *>(force->pair_match("^nvalchemi", 0, n));
    if (!model || std::find(h.models.begin(), h.models.end(), model) != h.models.end()) break;
    h.models.push_back(model);
  }
  // the hook runs where the model does
  if (h.hook) h.hook->place_on(h.models.empty() ? NVAlchemi::Device() : h.models.front()->device());
  if (h.validate_every && h.models.size() != 1)
    error->all(FLERR, Error::NOLASTLINE,
               "Fix nvalchemi/dd validate needs exactly one pair_style nvalchemi (found {}): it "
               "compares that model with its single-process reference",
               h.models.size());
  if (h.snapshot_every && h.models.empty())
    error->all(FLERR, Error::NOLASTLINE,
               "Fix nvalchemi/dd snapshot needs a pair_style nvalchemi: its pair_coeff names the "
               "species written to {}",
               h.snapshot_file);

  h.pe = nullptr;
  if (h.drift_every || h.snapshot_every) {
    h.pe = modify->get_compute_by_id("thermo_pe");
    if (!h.pe)
      error->all(FLERR, Error::NOLASTLINE,
                 "Fix nvalchemi/dd drift and snapshot need the compute thermo_pe, which was "
                 "deleted");
    // the run's first step writes a snapshot when it is due: its energy must be tallied
    if (due(h.snapshot_every)) h.pe->addstep(update->ntimestep);
  }
}

/* ---------------------------------------------------------------------- */

void FixNVAlchemiDD::setup(int vflag)
{
  count_owner_changes();
  impl->stats_step = -1;
  post_force(vflag);
  if (due(impl->snapshot_every)) {
    modify->clearstep_compute();
    write_snapshot();
  }
  request_sampled_energy();
}

void FixNVAlchemiDD::min_setup(int vflag)
{
  count_owner_changes();
  impl->stats_step = -1;
  post_force(vflag);
}

/* ----------------------------------------------------------------------
   the hook's stages; the virial is reset where the hook adds forces
------------------------------------------------------------------------- */

void FixNVAlchemiDD::initial_integrate(int /*vflag*/)
{
  if (due(impl->hook_every)) run_hook();
}

void FixNVAlchemiDD::setup_pre_force(int vflag)
{ pre_force(vflag); }

void FixNVAlchemiDD::min_pre_force(int vflag)
{ pre_force(vflag); }

void FixNVAlchemiDD::pre_force(int vflag)
{
  v_init(vflag);
  if (due(impl->hook_every)) run_hook();
}

/* ----------------------------------------------------------------------
   after the forces: validate the model, run the hook, guard the forces
------------------------------------------------------------------------- */

void FixNVAlchemiDD::post_force(int vflag)
{
  Impl &h = *impl;
  if (due(h.validate_every)) validate();
  if (h.hook_at(HookStage::AFTER_COMPUTE)) {
    v_init(vflag);
    if (due(h.hook_every)) run_hook();
  }
  if (due(h.guard_every)) guard();
}

void FixNVAlchemiDD::min_post_force(int vflag)
{ post_force(vflag); }

/* ----------------------------------------------------------------------
   after the step: owner changes (every step), drift, snapshots
------------------------------------------------------------------------- */

void FixNVAlchemiDD::end_of_step()
{
  count_owner_changes();
  Impl &h = *impl;
  if (h.hook_at(HookStage::AFTER_STEP) && due(h.hook_every)) run_hook();
  const bool drift = due(h.drift_every), snapshot = due(h.snapshot_every);
  if (!drift && !snapshot) return;
  modify->clearstep_compute();
  if (drift) sample_drift();
  if (snapshot) write_snapshot();
  request_sampled_energy();
}

// the potential energy of the next steps that drift and snapshots sample must be tallied
void FixNVAlchemiDD::request_sampled_energy()
{
  for (int every : {impl->drift_every, impl->snapshot_every})
    if (every) impl->pe->addstep((update->ntimestep / every + 1) * every);
}

/* ---------------------------------------------------------------------- */

void FixNVAlchemiDD::post_run()
{
  const Impl &h = *impl;
  if (comm->me != 0) return;
  if (h.validations)
    utils::logmesg(lmp,
                   "fix nvalchemi/dd: {} validations, largest relative difference in the last: "
                   "{:.3g}\n",
                   h.validations, h.validate_difference);
  if (h.clamped) utils::logmesg(lmp, "fix nvalchemi/dd: {} forces clamped so far\n", h.clamped);
}

bool FixNVAlchemiDD::due(int every) const
{ return every > 0 && update->ntimestep % every == 0; }

/* ----------------------------------------------------------------------
   atoms whose owner changed since the previous count (they carry the rank
   that owned them through migration and restarts)
------------------------------------------------------------------------- */

void FixNVAlchemiDD::count_owner_changes()
{
  bigint changes = 0;
  for (int i = 0; i < atom->nlocal; ++i)
    if (owner[i] != comm->me) {
      ++changes;
      owner[i] = comm->me;
    }
  impl->owner_changes = changes;
}

/* ----------------------------------------------------------------------
   the domain statistics, reduced over ranks once per step on demand
------------------------------------------------------------------------- */

double FixNVAlchemiDD::compute_vector(int n)
{
  const Impl &h = *impl;
  switch (n) {
    case DRIFT:
      return h.drift.slope();
    case VALIDATE_DIFFERENCE:
      return h.validate_difference;
    case CLAMPED:
      return static_cast<double>(h.clamped);
    default:
      if (h.stats_step != update->ntimestep) update_stats();
      return h.stats[n];
  }
}

void FixNVAlchemiDD::update_stats()
{
  Impl &h = *impl;
  double edges = 0.0;
  // each time summed over the models, then its maximum over ranks
  constexpr int NUM_TIMES = 8;
  const int time_stat[NUM_TIMES] = {MODEL_TIME,   GLUE_TIME,    EXCHANGE_TIME, GRAPH_TIME,
                                    TENSORS_TIME, FORWARD_TIME, BACKWARD_TIME, TALLY_TIME};
  double maxima[2 + NUM_TIMES] = {static_cast<double>(atom->nlocal),
                                  -static_cast<double>(atom->nlocal)};
  double *times = maxima + 2;
  for (const PairNVAlchemi *model : h.models) {
    const PairNVAlchemi::StepSummary &step = model->last_step();
    edges += static_cast<double>(step.edges);
    const double phases[NUM_TIMES] = {step.model,   step.glue,    step.exchange, step.graph,
                                      step.tensors, step.forward, step.backward, step.tally};
    for (int t = 0; t < NUM_TIMES; ++t) times[t] += phases[t];
  }
  double sums[4] = {static_cast<double>(atom->nlocal), static_cast<double>(atom->nghost), edges,
                    static_cast<double>(h.owner_changes)};
  MPI_Allreduce(MPI_IN_PLACE, sums, 4, MPI_DOUBLE, MPI_SUM, world);
  MPI_Allreduce(MPI_IN_PLACE, maxima, 2 + NUM_TIMES, MPI_DOUBLE, MPI_MAX, world);

  double *s = h.stats;
  const double mean = sums[0] / comm->nprocs;
  s[OWNED_MIN] = -maxima[1];
  s[OWNED_MAX] = maxima[0];
  s[OWNED_MEAN] = mean;
  s[IMBALANCE] = mean > 0.0 ? maxima[0] / mean : 1.0;
  s[GHOSTS] = sums[1];
  s[EDGES] = sums[2];
  s[OWNER_CHANGES] = sums[3];
  for (int t = 0; t < NUM_TIMES; ++t) s[time_stat[t]] = times[t];
  h.stats_step = update->ntimestep;
}

/* ----------------------------------------------------------------------
   validate: the decomposed result of the model against the same model on
   the gathered system in one process (rank 0), per output
------------------------------------------------------------------------- */

void FixNVAlchemiDD::validate()
{
  Impl &h = *impl;
  PairNVAlchemi *model = h.models.front();
  NVAlchemi::Contribution decomposed;
  model->decomposed_contribution(decomposed);

  constexpr int WIDTH = 8;    // ID, type, x, decomposed force
  std::vector<double> mine;
  mine.reserve(static_cast<size_t>(atom->nlocal) * WIDTH);
  for (int i = 0; i < atom->nlocal; ++i) {
    mine.push_back(static_cast<double>(atom->tag[i]));
    mine.push_back(atom->type[i]);
    for (int d = 0; d < 3; ++d) mine.push_back(atom->x[i][d]);
    for (int d = 0; d < 3; ++d) mine.push_back(decomposed.forces[3 * i + d]);
  }
  NVAlchemi::Gathered g;
  NVAlchemi::gather_rows(mine, WIDTH, false, world, g);

  NVAlchemi::Validation result;
  if (comm->me == 0) {
    const size_t natoms = g.by_id.size();
    std::vector<double> x(3 * natoms);
    std::vector<int> type(natoms);
    decomposed.forces.resize(3 * natoms);    // now in atom-ID order, as the reference's
    for (size_t k = 0; k < natoms; ++k) {
      const double *row = &g.rows[static_cast<size_t>(g.by_id[k]) * WIDTH];
      type[k] = static_cast<int>(row[1]);
      std::copy_n(row + 2, 3, &x[3 * k]);
      std::copy_n(row + 5, 3, &decomposed.forces[3 * k]);
    }
    NVAlchemi::Contribution reference;
    model->reference_contribution(x, type, reference);
    result = NVAlchemi::validate(decomposed, reference);
    utils::logmesg(lmp,
                   "fix nvalchemi/dd validate step {}: largest differences from the "
                   "single-process reference: {}\n",
                   update->ntimestep, result.report);
  }
  MPI_Bcast(&result.worst, 1, MPI_DOUBLE, 0, world);
  ++h.validations;
  h.validate_difference = result.worst;
  if (!(result.worst <= h.validate_tolerance))
    error->all(FLERR, Error::NOLASTLINE,
               "Fix nvalchemi/dd validate: on step {} the decomposed run differs from the "
               "single-process reference by {:.3g} relative, above the tolerance {:.3g}{}. "
               "Check the model's spec (halo mode, output reductions, force strategy)",
               update->ntimestep, result.worst, h.validate_tolerance,
               comm->me == 0 ? " (" + result.report + ")" : "");
}

/* ----------------------------------------------------------------------
   the TorchScript hook at its scope; its forces are added to the atoms of
   the group, its energy and virial reach thermo through fix_modify
------------------------------------------------------------------------- */

void FixNVAlchemiDD::run_hook()
{
  Impl &h = *impl;
  const std::vector<int> no_species;
  const NVAlchemi::HookRunner::Result result = h.hook->run(
      groupbit, h.models.empty() ? no_species : h.models.front()->atomic_number_of_type(),
      thermo_virial);
  h.hook_energy = result.energy;
  h.hook_step = update->ntimestep;
  if (vflag_global && result.has_virial)
    for (int v = 0; v < 6; ++v) virial[v] += result.virial[v];
}

double FixNVAlchemiDD::compute_scalar()
{
  // the hook's energy on the steps it acts, like its forces
  return impl->hook_step == update->ntimestep ? impl->hook_energy : 0.0;
}

/* ----------------------------------------------------------------------
   guard: non-finite total forces (from any style or fix: pair_style
   nvalchemi stops its own model's on the rank that has them) stop the run
   naming the atoms and ranks; forces above the threshold stop it or are
   clamped
------------------------------------------------------------------------- */

void FixNVAlchemiDD::guard()
{
  Impl &h = *impl;
  const NVAlchemi::ForceCheck check = NVAlchemi::check_forces(
      atom->f, atom->mask, groupbit, atom->nlocal, h.max_force, h.clamp, GUARD_REPORTED);

  bigint counts[3] = {check.non_finite, check.too_large, check.clamped};
  MPI_Allreduce(MPI_IN_PLACE, counts, 3, MPI_LMP_BIGINT, MPI_SUM, world);
  if (counts[2]) {
    h.clamped += counts[2];
    if (!h.clamp_warned && comm->me == 0)
      error->warning(FLERR,
                     "Fix nvalchemi/dd guard clamped {} forces above {} on step {}; the total "
                     "is reported in f_{}[{}]",
                     counts[2], h.max_force, update->ntimestep, id, CLAMPED + 1);
    h.clamp_warned = true;
  }
  if (!counts[0] && !counts[1]) return;

  // name the atoms (and ranks) on rank 0: ID, rank, kind (0 non-finite, 1 too large)
  std::vector<double> mine;
  const double me = comm->me;
  for (int i : check.non_finite_atoms) mine.insert(mine.end(), {1.0 * atom->tag[i], me, 0.0});
  for (int i : check.too_large_atoms) mine.insert(mine.end(), {1.0 * atom->tag[i], me, 1.0});
  NVAlchemi::Gathered g;
  NVAlchemi::gather_rows(mine, 3, false, world, g);
  std::string atoms[2];
  for (int row : g.by_id) {
    const double *r = &g.rows[3 * static_cast<size_t>(row)];
    atoms[static_cast<int>(r[2])] +=
        fmt::format(" {} (rank {})", static_cast<bigint>(r[0]), static_cast<int>(r[1]));
  }
  std::string message;
  if (counts[0])
    message += fmt::format("non-finite forces on {} atoms, IDs:{}; ", counts[0], atoms[0]);
  if (counts[1])
    message += fmt::format("forces above maxforce {} on {} atoms, IDs:{}; ", h.max_force, counts[1],
                           atoms[1]);
  error->all(FLERR, Error::NOLASTLINE,
             "Fix nvalchemi/dd guard on step {}: {}(at most {} atoms "
             "named per rank)",
             update->ntimestep, message, GUARD_REPORTED);
}

/* ----------------------------------------------------------------------
   drift: slope of the total energy per atom over the last `window`
   samples, by least squares
------------------------------------------------------------------------- */

void FixNVAlchemiDD::sample_drift()
{
  Impl &h = *impl;
  double kinetic = 0.0;
  for (int i = 0; i < atom->nlocal; ++i) {
    const double m = atom->rmass ? atom->rmass[i] : atom->mass[atom->type[i]];
    const double *v = atom->v[i];
    kinetic += m * (v[0] * v[0] + v[1] * v[1] + v[2] * v[2]);
  }
  MPI_Allreduce(MPI_IN_PLACE, &kinetic, 1, MPI_DOUBLE, MPI_SUM, world);
  kinetic *= 0.5 * force->mvv2e;
  const double total = (h.pe->compute_scalar() + kinetic) / std::max<bigint>(1, atom->natoms);
  if (!h.drift.add(update->ntimestep, total)) return;
  const double drift = h.drift.slope();

  const bool above = std::fabs(drift) > h.drift_tolerance;
  if (above && h.drift_stops)
    error->all(FLERR, Error::NOLASTLINE,
               "Fix nvalchemi/dd drift: total energy drifts by {:.4g} per atom per step over the "
               "last {} samples on step {}, above the tolerance {:.4g}",
               drift, h.drift_window, update->ntimestep, h.drift_tolerance);
  if (above && !h.drift_warned && comm->me == 0)
    error->warning(FLERR,
                   "Fix nvalchemi/dd drift: total energy drifts by {:.4g} per atom per step over "
                   "the last {} samples on step {}, above the tolerance {:.4g}",
                   drift, h.drift_window, update->ntimestep, h.drift_tolerance);
  h.drift_warned = above;
}

/* ----------------------------------------------------------------------
   snapshot: the group gathered on rank 0, sorted by atom ID, appended as
   one extended-XYZ frame (positions relative to the box origin)
------------------------------------------------------------------------- */

void FixNVAlchemiDD::write_snapshot()
{
  Impl &h = *impl;
  const double energy = h.pe->compute_scalar();
  constexpr int WIDTH = 8;    // ID, type, x, f
  std::vector<double> mine;
  for (int i = 0; i < atom->nlocal; ++i) {
    if (!(atom->mask[i] & groupbit)) continue;
    mine.push_back(static_cast<double>(atom->tag[i]));
    mine.push_back(atom->type[i]);
    for (int d = 0; d < 3; ++d) mine.push_back(atom->x[i][d] - domain->boxlo[d]);
    for (int d = 0; d < 3; ++d) mine.push_back(atom->f[i][d]);
  }
  NVAlchemi::Gathered g;
  NVAlchemi::gather_rows(mine, WIDTH, false, world, g);
  if (comm->me != 0) return;

  const std::vector<int> &z_of_type = h.models.front()->atomic_number_of_type();
  std::vector<NVAlchemi::FrameAtom> atoms(g.by_id.size());
  for (size_t k = 0; k < atoms.size(); ++k) {
    const double *r = &g.rows[static_cast<size_t>(g.by_id[k]) * WIDTH];
    atoms[k].id = static_cast<int64_t>(r[0]);
    atoms[k].atomic_number = z_of_type[static_cast<int>(r[1])];
    std::copy_n(r + 2, 3, atoms[k].position);
    std::copy_n(r + 5, 3, atoms[k].force);
  }
  const std::string frame =
      NVAlchemi::extxyz_frame(atoms, NVAlchemi::box_cell(domain), energy, update->ntimestep);
  fputs(frame.c_str(), h.snapshot);
  fflush(h.snapshot);
}

/* ----------------------------------------------------------------------
   global state in restart files: drift samples, clamp count, validation
------------------------------------------------------------------------- */

void FixNVAlchemiDD::write_restart(FILE *fp)
{
  const Impl &h = *impl;
  std::vector<double> list = {static_cast<double>(h.clamped), h.validate_difference,
                              static_cast<double>(h.validations)};
  const std::vector<double> drift = h.drift.state();
  list.insert(list.end(), drift.begin(), drift.end());
  if (comm->me == 0) {
    const int size = static_cast<int>(list.size() * sizeof(double));
    fwrite(&size, sizeof(int), 1, fp);
    fwrite(list.data(), sizeof(double), list.size(), fp);
  }
}

void FixNVAlchemiDD::restart(char *buf)
{
  Impl &h = *impl;
  const auto *list = reinterpret_cast<const double *>(buf);
  h.clamped = static_cast<bigint>(list[0]);
  h.validate_difference = list[1];
  h.validations = static_cast<int>(list[2]);
  h.drift.restore(list + 3);
}

/* ----------------------------------------------------------------------
   per-atom state: the owning rank at the previous step
------------------------------------------------------------------------- */

void FixNVAlchemiDD::grow_arrays(int nmax)
{ memory->grow(owner, nmax, "nvalchemi/dd:owner"); }

void FixNVAlchemiDD::copy_arrays(int i, int j, int /*delflag*/)
{ owner[j] = owner[i]; }

int FixNVAlchemiDD::pack_exchange(int i, double *buf)
{
  buf[0] = owner[i];
  return 1;
}

int FixNVAlchemiDD::unpack_exchange(int nlocal, double *buf)
{
  owner[nlocal] = static_cast<int>(buf[0]);
  return 1;
}

int FixNVAlchemiDD::pack_restart(int i, double *buf)
{
  buf[0] = 2;    // values of this fix, this count included (how fixes share atom->extra)
  buf[1] = owner[i];
  return 2;
}

void FixNVAlchemiDD::unpack_restart(int nlocal, int nth)
{
  double **extra = atom->extra;
  int m = 0;
  for (int k = 0; k < nth; ++k) m += static_cast<int>(extra[nlocal][m]);
  owner[nlocal] = static_cast<int>(extra[nlocal][m + 1]);
}

int FixNVAlchemiDD::size_restart(int /*nlocal*/)
{ return 2; }

int FixNVAlchemiDD::maxsize_restart()
{ return 2; }

double FixNVAlchemiDD::memory_usage()
{ return static_cast<double>(atom->nmax) * sizeof(int); }
