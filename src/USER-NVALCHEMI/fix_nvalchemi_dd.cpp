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

#include "nvalchemi_lammps.h"
#include "nvalchemi_metadata.h"
#include "nvalchemi_model.h"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <deque>
#include <memory>
#include <numeric>
#include <string>
#include <utility>
#include <vector>

using namespace LAMMPS_NS;
using namespace FixConst;

namespace {
enum class Scope { LOCAL, GLOBAL, RANK_ZERO };
// where in a step the hook runs: initial_integrate, pre_force, post_force, end_of_step
enum class Stage { BEFORE_STEP, BEFORE_COMPUTE, AFTER_COMPUTE, AFTER_STEP };
constexpr const char *STAGE_NAMES[] = {"before_step", "before_compute", "after_compute",
                                       "after_step"};

// stages at which added forces act on this step's integration
bool adds_forces(Stage stage)
{ return stage == Stage::BEFORE_COMPUTE || stage == Stage::AFTER_COMPUTE; }

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
  NUM_STATS
};

// atoms reported by name in a guard error, per rank
constexpr int GUARD_REPORTED = 8;

// Rows of `width` doubles from every rank, in rank order, and their order by atom ID (the first
// column of each row). Held on every rank, or on rank 0 only.
struct Gathered {
  std::vector<double> rows;
  std::vector<int> counts, displs;    // rows of each rank, and where they start
  std::vector<int> by_id;             // row indices sorted by atom ID
};

void gather_rows(const std::vector<double> &mine, int width, bool everywhere, MPI_Comm world,
                 Gathered &g)
{
  int me, nprocs;
  MPI_Comm_rank(world, &me);
  MPI_Comm_size(world, &nprocs);
  const int n = static_cast<int>(mine.size()) / width;
  g.counts.resize(nprocs);
  MPI_Allgather(&n, 1, MPI_INT, g.counts.data(), 1, MPI_INT, world);
  g.displs.assign(nprocs, 0);
  for (int p = 1; p < nprocs; ++p) g.displs[p] = g.displs[p - 1] + g.counts[p - 1];
  const int total = g.displs.back() + g.counts.back();
  std::vector<int> value_counts(nprocs), value_displs(nprocs);
  for (int p = 0; p < nprocs; ++p) {
    value_counts[p] = g.counts[p] * width;
    value_displs[p] = g.displs[p] * width;
  }
  g.rows.assign(everywhere || me == 0 ? static_cast<size_t>(total) * width : 0, 0.0);
  if (everywhere)
    MPI_Allgatherv(mine.data(), n * width, MPI_DOUBLE, g.rows.data(), value_counts.data(),
                   value_displs.data(), MPI_DOUBLE, world);
  else
    MPI_Gatherv(mine.data(), n * width, MPI_DOUBLE, g.rows.data(), value_counts.data(),
                value_displs.data(), MPI_DOUBLE, 0, world);
  g.by_id.clear();
  if (g.rows.empty()) return;
  g.by_id.resize(total);
  std::iota(g.by_id.begin(), g.by_id.end(), 0);
  std::sort(g.by_id.begin(), g.by_id.end(), [&](int a, int b) {
    return g.rows[a * width] < g.rows[b * width];
  });
}

// largest absolute difference, and relative to the largest reference value (or to `scale`, when
// larger: values that cancel to nearly zero are judged against the terms they are summed from)
struct Difference {
  double abs = 0.0, rel = 0.0;
};

Difference compare(const double *a, const double *reference, size_t n, double scale = 0.0)
{
  double diff = 0.0;
  for (size_t k = 0; k < n; ++k) {
    diff = std::max(diff, std::fabs(a[k] - reference[k]));
    scale = std::max(scale, std::fabs(reference[k]));
  }
  return {diff, scale > 0.0 ? diff / scale : diff};
}
}    // namespace

struct FixNVAlchemiDD::Impl {
  // settings; an interval of 0 turns the hook off
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
  Scope hook_scope = Scope::LOCAL;
  Stage hook_stage = Stage::AFTER_COMPUTE;
  std::string hook_file;
  std::unique_ptr<NVAlchemi::TorchHook> hook;

  // what the hooks use
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
  std::deque<std::pair<bigint, double>> drift_samples;    // step, total energy per atom
  double drift = 0.0;
  bool drift_warned = false;
  int validations = 0;
  double validate_difference = 0.0;    // largest relative difference of the last validation

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
      h.hook_file = arg[iarg + 1];
      const std::string scope = arg[iarg + 2];
      if (scope == "local")
        h.hook_scope = Scope::LOCAL;
      else if (scope == "global")
        h.hook_scope = Scope::GLOBAL;
      else if (scope == "rank_zero")
        h.hook_scope = Scope::RANK_ZERO;
      else
        error->all(FLERR, iarg + 2,
                   "fix nvalchemi/dd hook scope must be local, global or rank_zero, got {}", scope);
      iarg += 3;
      h.hook_every = interval(0);
      iarg += 1;
    } else if (keyword == "stage") {
      need(1, "stage");
      const std::string stage = arg[iarg + 1];
      const auto *found = std::find(std::begin(STAGE_NAMES), std::end(STAGE_NAMES), stage);
      if (found == std::end(STAGE_NAMES))
        error->all(FLERR, iarg + 1,
                   "fix nvalchemi/dd stage must be before_step, before_compute, after_compute or "
                   "after_step, got {}",
                   stage);
      h.hook_stage = static_cast<Stage>(found - std::begin(STAGE_NAMES));
      stage_given = true;
      iarg += 2;
    } else {
      error->all(FLERR, iarg, "Unknown fix nvalchemi/dd keyword: {}", keyword);
    }
  }
  if (stage_given && h.hook_file.empty())
    error->all(FLERR, "fix nvalchemi/dd stage sets where the hook runs: it needs the hook keyword");
  if (h.max_force > 0.0 && h.guard_every == 0)
    error->all(FLERR, "fix nvalchemi/dd maxforce needs the guard keyword (guard N)");

  if (!h.hook_file.empty()) {
    std::string archive;
    if (!NVAlchemi::read_and_broadcast(lmp, h.hook_file, archive))
      error->all(FLERR, "Cannot open fix nvalchemi/dd hook file {}", h.hook_file);
    try {
      h.hook = std::make_unique<NVAlchemi::TorchHook>(archive);
    } catch (std::exception &e) {
      error->all(FLERR, "Cannot load fix nvalchemi/dd hook {} as a TorchScript module: {}",
                 h.hook_file, e.what());
    }
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
  if (impl->hook && impl->hook_stage == Stage::BEFORE_STEP) mask |= INITIAL_INTEGRATE;
  if (impl->hook && impl->hook_stage == Stage::BEFORE_COMPUTE) mask |= PRE_FORCE | MIN_PRE_FORCE;
  return mask;
}

/* ---------------------------------------------------------------------- */

void FixNVAlchemiDD::init()
{
  Impl &h = *impl;
  if (utils::strmatch(update->integrate_style, "^respa"))
    error->all(FLERR, Error::NOLASTLINE, "Fix nvalchemi/dd does not support run_style respa");
  if ((thermo_energy || thermo_virial) && !adds_forces(h.hook_stage))
    error->all(FLERR, Error::NOLASTLINE,
               "fix_modify energy or virial with fix nvalchemi/dd needs the hook at stage "
               "before_compute or after_compute (it is at {})",
               STAGE_NAMES[static_cast<int>(h.hook_stage)]);

  h.models.clear();
  for (int n = 1;; ++n) {
    auto *model = dynamic_cast<PairNVAlchemi *>(force->pair_match("^nvalchemi", 0, n));
    if (!model || std::find(h.models.begin(), h.models.end(), model) != h.models.end()) break;
    h.models.push_back(model);
  }
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
  if (h.hook_stage == Stage::AFTER_COMPUTE) {
    v_init(vflag);
    if (h.hook && due(h.hook_every)) run_hook();
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
  if (h.hook && h.hook_stage == Stage::AFTER_STEP && due(h.hook_every)) run_hook();
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
      return h.drift;
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
  double times[3] = {0.0, 0.0, 0.0};
  for (const PairNVAlchemi *model : h.models) {
    const PairNVAlchemi::StepSummary &step = model->last_step();
    edges += static_cast<double>(step.edges);
    times[0] += step.model;
    times[1] += step.glue;
    times[2] += step.exchange;
  }
  double sums[4] = {static_cast<double>(atom->nlocal), static_cast<double>(atom->nghost), edges,
                    static_cast<double>(h.owner_changes)};
  double maxima[5] = {static_cast<double>(atom->nlocal), -static_cast<double>(atom->nlocal),
                      times[0], times[1], times[2]};
  MPI_Allreduce(MPI_IN_PLACE, sums, 4, MPI_DOUBLE, MPI_SUM, world);
  MPI_Allreduce(MPI_IN_PLACE, maxima, 5, MPI_DOUBLE, MPI_MAX, world);

  double *s = h.stats;
  const double mean = sums[0] / comm->nprocs;
  s[OWNED_MIN] = -maxima[1];
  s[OWNED_MAX] = maxima[0];
  s[OWNED_MEAN] = mean;
  s[IMBALANCE] = mean > 0.0 ? maxima[0] / mean : 1.0;
  s[GHOSTS] = sums[1];
  s[EDGES] = sums[2];
  s[OWNER_CHANGES] = sums[3];
  s[MODEL_TIME] = maxima[2];
  s[GLUE_TIME] = maxima[3];
  s[EXCHANGE_TIME] = maxima[4];
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
  const PairNVAlchemi::Contribution decomposed = model->decomposed_contribution();

  constexpr int WIDTH = 8;    // ID, type, x, decomposed force
  std::vector<double> mine;
  mine.reserve(static_cast<size_t>(atom->nlocal) * WIDTH);
  for (int i = 0; i < atom->nlocal; ++i) {
    mine.push_back(static_cast<double>(atom->tag[i]));
    mine.push_back(atom->type[i]);
    for (int d = 0; d < 3; ++d) mine.push_back(atom->x[i][d]);
    for (int d = 0; d < 3; ++d) mine.push_back(decomposed.forces[3 * i + d]);
  }
  Gathered g;
  gather_rows(mine, WIDTH, false, world, g);

  int failed = 0;
  double worst = 0.0;
  std::string report;
  if (comm->me == 0) {
    const size_t natoms = g.by_id.size();
    std::vector<double> x(3 * natoms), forces(3 * natoms);
    std::vector<int> type(natoms);
    for (size_t k = 0; k < natoms; ++k) {
      const double *row = &g.rows[static_cast<size_t>(g.by_id[k]) * WIDTH];
      type[k] = static_cast<int>(row[1]);
      std::copy_n(row + 2, 3, &x[3 * k]);
      std::copy_n(row + 5, 3, &forces[3 * k]);
    }
    const PairNVAlchemi::Contribution reference = model->reference_contribution(x, type);

    const Difference energy = compare(&decomposed.energy, &reference.energy, 1);
    const Difference force =
        compare(forces.data(), reference.forces.data(), forces.size(), reference.force_scale);
    worst = std::max(energy.rel, force.rel);
    report = fmt::format("energy {:.3g} ({:.3g} relative), forces {:.3g} ({:.3g})", energy.abs,
                         energy.rel, force.abs, force.rel);
    if (reference.has_virial && decomposed.has_virial) {
      const Difference virial = compare(decomposed.virial, reference.virial, 6);
      worst = std::max(worst, virial.rel);
      report += fmt::format(", virial {:.3g} ({:.3g})", virial.abs, virial.rel);
    } else {
      report += ", virial not compared (the model returns no 'virial')";
    }
    failed = !(worst <= h.validate_tolerance);
    utils::logmesg(lmp,
                   "fix nvalchemi/dd validate step {}: largest differences from the "
                   "single-process reference: {}\n",
                   update->ntimestep, report);
  }
  MPI_Bcast(&failed, 1, MPI_INT, 0, world);
  MPI_Bcast(&worst, 1, MPI_DOUBLE, 0, world);
  ++h.validations;
  h.validate_difference = worst;
  if (failed)
    error->all(FLERR, Error::NOLASTLINE,
               "Fix nvalchemi/dd validate: on step {} the decomposed run differs from the "
               "single-process reference by {:.3g} relative, above the tolerance {:.3g} ({}). "
               "Check the model's spec (halo mode, output reductions, force strategy)",
               update->ntimestep, worst, h.validate_tolerance, report);
}

/* ----------------------------------------------------------------------
   the TorchScript hook at its scope; its forces are added to the atoms of
   the group, its energy and virial reach thermo through fix_modify
------------------------------------------------------------------------- */

void FixNVAlchemiDD::run_hook()
{
  Impl &h = *impl;
  constexpr int WIDTH = 11;    // ID, type, unwrapped x, v, f
  const int nlocal = atom->nlocal;
  std::vector<double> mine;
  std::vector<int> members;    // local index of each row
  for (int i = 0; i < nlocal; ++i) {
    if (!(atom->mask[i] & groupbit)) continue;
    members.push_back(i);
    double unwrapped[3];
    domain->unmap(atom->x[i], atom->image[i], unwrapped);
    mine.push_back(static_cast<double>(atom->tag[i]));
    mine.push_back(atom->type[i]);
    for (double value : unwrapped) mine.push_back(value);
    for (int d = 0; d < 3; ++d) mine.push_back(atom->v[i][d]);
    for (int d = 0; d < 3; ++d) mine.push_back(atom->f[i][d]);
  }

  // the rows the module sees: this rank's (LOCAL), or the gathered group sorted by atom ID
  Gathered g;
  const std::vector<double> *rows = &mine;
  std::vector<int> order;    // row of the module's batch -> row of `rows`
  if (h.hook_scope == Scope::LOCAL) {
    order.resize(members.size());
    std::iota(order.begin(), order.end(), 0);
  } else {
    gather_rows(mine, WIDTH, h.hook_scope == Scope::GLOBAL, world, g);
    rows = &g.rows;
    order = g.by_id;
  }
  const bool calls = h.hook_scope != Scope::RANK_ZERO || comm->me == 0;

  NVAlchemi::HookResult result;
  std::vector<double> added;    // forces for `rows`, in their order
  if (calls) {
    std::vector<int> z_of_type;    // empty: no model names the species
    if (!h.models.empty()) z_of_type = h.models.front()->atomic_number_of_type();
    NVAlchemi::HookBatch batch;
    batch.n = static_cast<int64_t>(order.size());
    batch.cell = NVAlchemi::box_cell(domain);
    for (int row : order) {
      const double *r = &(*rows)[static_cast<size_t>(row) * WIDTH];
      batch.atom_ids.push_back(static_cast<int64_t>(r[0]));
      batch.atom_types.push_back(static_cast<int64_t>(r[1]));
      if (!z_of_type.empty()) batch.atomic_numbers.push_back(z_of_type[static_cast<int>(r[1])]);
      batch.positions.insert(batch.positions.end(), r + 2, r + 5);
      batch.velocities.insert(batch.velocities.end(), r + 5, r + 8);
      batch.forces.insert(batch.forces.end(), r + 8, r + 11);
    }
    try {
      h.hook->call(batch, result);
    } catch (std::exception &e) {
      error->one(FLERR, Error::NOLASTLINE, "Fix nvalchemi/dd hook {} failed on step {}: {}",
                 h.hook_file, update->ntimestep, e.what());
    }
    if (thermo_virial && !result.has_virial)
      error->one(FLERR, Error::NOLASTLINE,
                 "fix_modify virial yes needs fix nvalchemi/dd hook {} to return 'virial' "
                 "[3,3]",
                 h.hook_file);
    if (result.has_forces) {
      added.assign(rows->size() / WIDTH * 3, 0.0);
      for (size_t k = 0; k < order.size(); ++k)
        std::copy_n(&result.forces[3 * k], 3, &added[3 * static_cast<size_t>(order[k])]);
    }
  }

  // this rank's share of the module's forces
  std::vector<double> own(3 * members.size(), 0.0);
  int has_forces = result.has_forces;
  if (h.hook_scope == Scope::RANK_ZERO) MPI_Bcast(&has_forces, 1, MPI_INT, 0, world);
  if (has_forces && !adds_forces(h.hook_stage))
    error->all(FLERR, Error::NOLASTLINE,
               "Fix nvalchemi/dd hook {} returned forces at stage {}, where they would not act on "
               "the step: run it at stage before_compute or after_compute, or return no 'forces'",
               h.hook_file, STAGE_NAMES[static_cast<int>(h.hook_stage)]);
  if (h.hook_scope == Scope::RANK_ZERO) {
    if (has_forces) {
      std::vector<int> counts(comm->nprocs), displs(comm->nprocs);
      for (int p = 0; p < comm->nprocs; ++p) {
        counts[p] = 3 * g.counts[p];
        displs[p] = 3 * g.displs[p];
      }
      MPI_Scatterv(added.data(), counts.data(), displs.data(), MPI_DOUBLE, own.data(),
                   static_cast<int>(own.size()), MPI_DOUBLE, 0, world);
    }
  } else if (has_forces) {
    const size_t first = h.hook_scope == Scope::GLOBAL ? 3 * static_cast<size_t>(g.displs[comm->me])
                                                       : 0;
    std::copy_n(added.begin() + first, own.size(), own.begin());
  }
  double **f = atom->f;
  for (size_t k = 0; k < members.size(); ++k)
    for (int d = 0; d < 3; ++d) f[members[k]][d] += own[3 * k + d];

  // energy and virial: partials of each rank (LOCAL), or one value counted once
  double energy = result.has_energy ? result.energy : 0.0;
  if (h.hook_scope == Scope::LOCAL)
    MPI_Allreduce(MPI_IN_PLACE, &energy, 1, MPI_DOUBLE, MPI_SUM, world);
  else if (h.hook_scope == Scope::RANK_ZERO)
    MPI_Bcast(&energy, 1, MPI_DOUBLE, 0, world);
  h.hook_energy = energy;
  h.hook_step = update->ntimestep;
  const bool counts_virial = h.hook_scope == Scope::LOCAL || comm->me == 0;
  if (vflag_global && result.has_virial && counts_virial) {
    const auto &voigt = NVAlchemi::VIRIAL_VOIGT;
    for (int v = 0; v < 6; ++v) virial[v] += result.virial[3 * voigt[v][0] + voigt[v][1]];
  }
}

double FixNVAlchemiDD::compute_scalar()
{
  // the hook's energy on the steps it acts, like its forces
  return impl->hook_step == update->ntimestep ? impl->hook_energy : 0.0;
}

/* ----------------------------------------------------------------------
   guard: non-finite energy or forces stop the run naming the atoms and
   ranks; forces above the threshold stop it or are clamped
------------------------------------------------------------------------- */

void FixNVAlchemiDD::guard()
{
  Impl &h = *impl;
  const int nlocal = atom->nlocal;
  double **f = atom->f;
  int bad_energy = 0;
  for (const PairNVAlchemi *model : h.models)
    if (!std::isfinite(model->last_step().energy_share)) bad_energy = 1;

  std::vector<tagint> named;                   // non-finite first, then above the threshold
  bigint counts[4] = {bad_energy, 0, 0, 0};    // energy, non-finite, too large, clamped
  std::vector<tagint> too_large;
  const double max_sq = h.max_force * h.max_force;
  for (int i = 0; i < nlocal; ++i) {
    if (!(atom->mask[i] & groupbit)) continue;
    const double fsq = f[i][0] * f[i][0] + f[i][1] * f[i][1] + f[i][2] * f[i][2];
    if (!std::isfinite(fsq)) {
      if (counts[1]++ < GUARD_REPORTED) named.push_back(atom->tag[i]);
    } else if (h.max_force > 0.0 && fsq > max_sq) {
      if (h.clamp) {
        const double scale = h.max_force / std::sqrt(fsq);
        for (int d = 0; d < 3; ++d) f[i][d] *= scale;
        ++counts[3];
      } else if (counts[2]++ < GUARD_REPORTED) {
        too_large.push_back(atom->tag[i]);
      }
    }
  }
  MPI_Allreduce(MPI_IN_PLACE, counts, 4, MPI_LMP_BIGINT, MPI_SUM, world);
  if (counts[3]) {
    h.clamped += counts[3];
    if (!h.clamp_warned && comm->me == 0)
      error->warning(FLERR,
                     "Fix nvalchemi/dd guard clamped {} forces above {} on step {}; the total "
                     "is reported in f_{}[{}]",
                     counts[3], h.max_force, update->ntimestep, id, CLAMPED + 1);
    h.clamp_warned = true;
  }
  if (!counts[0] && !counts[1] && !counts[2]) return;

  // name the atoms (and ranks) on rank 0: ID, rank, kind (0 non-finite, 1 too large)
  std::vector<double> mine;
  for (tagint tag : named) mine.insert(mine.end(), {static_cast<double>(tag), 1.0 * comm->me, 0.0});
  for (tagint tag : too_large)
    mine.insert(mine.end(), {static_cast<double>(tag), 1.0 * comm->me, 1.0});
  if (bad_energy) mine.insert(mine.end(), {0.0, 1.0 * comm->me, 2.0});
  Gathered g;
  gather_rows(mine, 3, false, world, g);
  std::string atoms[3];
  for (int row : g.by_id) {
    const double *r = &g.rows[3 * static_cast<size_t>(row)];
    const int kind = static_cast<int>(r[2]);
    atoms[kind] += kind == 2
        ? fmt::format(" {}", static_cast<int>(r[1]))
        : fmt::format(" {} (rank {})", static_cast<bigint>(r[0]), static_cast<int>(r[1]));
  }
  std::string message;
  if (counts[0]) message += fmt::format("non-finite model energy on ranks{}; ", atoms[2]);
  if (counts[1])
    message += fmt::format("non-finite forces on {} atoms, IDs:{}; ", counts[1], atoms[0]);
  if (counts[2])
    message += fmt::format("forces above maxforce {} on {} atoms, IDs:{}; ", h.max_force, counts[2],
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

  h.drift_samples.emplace_back(update->ntimestep, total);
  while (static_cast<int>(h.drift_samples.size()) > h.drift_window) h.drift_samples.pop_front();
  if (static_cast<int>(h.drift_samples.size()) < h.drift_window) return;

  double mean_t = 0.0, mean_e = 0.0;
  for (const auto &sample : h.drift_samples) {
    mean_t += static_cast<double>(sample.first);
    mean_e += sample.second;
  }
  mean_t /= h.drift_window;
  mean_e /= h.drift_window;
  double stt = 0.0, ste = 0.0;
  for (const auto &sample : h.drift_samples) {
    const double dt = static_cast<double>(sample.first) - mean_t;
    stt += dt * dt;
    ste += dt * (sample.second - mean_e);
  }
  h.drift = ste / stt;

  const bool above = std::fabs(h.drift) > h.drift_tolerance;
  if (above && h.drift_stops)
    error->all(FLERR, Error::NOLASTLINE,
               "Fix nvalchemi/dd drift: total energy drifts by {:.4g} per atom per step over the "
               "last {} samples on step {}, above the tolerance {:.4g}",
               h.drift, h.drift_window, update->ntimestep, h.drift_tolerance);
  if (above && !h.drift_warned && comm->me == 0)
    error->warning(FLERR,
                   "Fix nvalchemi/dd drift: total energy drifts by {:.4g} per atom per step over "
                   "the last {} samples on step {}, above the tolerance {:.4g}",
                   h.drift, h.drift_window, update->ntimestep, h.drift_tolerance);
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
  Gathered g;
  gather_rows(mine, WIDTH, false, world, g);
  if (comm->me != 0) return;

  const std::vector<int> &z_of_type = h.models.front()->atomic_number_of_type();
  const NVAlchemi::Cell cell = NVAlchemi::box_cell(domain);
  std::string frame = fmt::format("{}\nLattice=\"", g.by_id.size());
  for (int a = 0; a < 3; ++a)
    for (int c = 0; c < 3; ++c)
      frame += fmt::format("{}{:.17g}", a + c ? " " : "", cell.lattice[a][c]);
  frame += fmt::format("\" Properties=species:S:1:pos:R:3:forces:R:3:id:I:1 energy={:.17g} "
                       "pbc=\"{} {} {}\" timestep={}\n",
                       energy, cell.pbc[0] ? 'T' : 'F', cell.pbc[1] ? 'T' : 'F',
                       cell.pbc[2] ? 'T' : 'F', update->ntimestep);
  for (int row : g.by_id) {
    const double *r = &g.rows[static_cast<size_t>(row) * WIDTH];
    const int z = z_of_type[static_cast<int>(r[1])];
    frame += fmt::format("{} {:.17g} {:.17g} {:.17g} {:.17g} {:.17g} {:.17g} {}\n",
                         z > 0 ? NVAlchemi::element_symbol(z) : "X", r[2], r[3], r[4], r[5], r[6],
                         r[7], static_cast<bigint>(r[0]));
  }
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
                              static_cast<double>(h.validations), h.drift,
                              static_cast<double>(h.drift_samples.size())};
  for (const auto &sample : h.drift_samples) {
    list.push_back(static_cast<double>(sample.first));
    list.push_back(sample.second);
  }
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
  h.drift = list[3];
  const int nsamples = static_cast<int>(list[4]);
  h.drift_samples.clear();
  for (int k = 0; k < nsamples; ++k)
    h.drift_samples.emplace_back(static_cast<bigint>(list[5 + 2 * k]), list[6 + 2 * k]);
  while (h.drift_window && static_cast<int>(h.drift_samples.size()) > h.drift_window)
    h.drift_samples.pop_front();
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
