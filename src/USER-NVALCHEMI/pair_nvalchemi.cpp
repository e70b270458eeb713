/* ----------------------------------------------------------------------
   LAMMPS - Large-scale Atomic/Molecular Massively Parallel Simulator
   https://www.lammps.org/, Sandia National Laboratories
   LAMMPS development team: developers@lammps.org

   This software is distributed under the GNU General Public License.
   See the README file in the top-level LAMMPS directory.
------------------------------------------------------------------------- */

/* ----------------------------------------------------------------------
   pair_style nvalchemi: machine-learned interatomic potentials (TorchScript
   or AOTInductor) under LAMMPS' domain decomposition (USER-NVALCHEMI package).
------------------------------------------------------------------------- */

#include "pair_nvalchemi.h"

#include "atom.h"
#include "comm.h"
#include "domain.h"
#include "error.h"
#include "force.h"
#include "memory.h"
#include "neigh_list.h"
#include "neighbor.h"
#include "platform.h"
#include "update.h"

#include "nvalchemi_halo.h"
#include "nvalchemi_halo_atom_comm.h"
#include "nvalchemi_lammps_data.h"
#include "nvalchemi_model_metadata.h"
#include "nvalchemi_outputs_consolidate.h"
#include "nvalchemi_pair_halo.h"
#include "nvalchemi_pair_keywords.h"
#include "nvalchemi_pair_memory.h"
#include "nvalchemi_rank_graph_torch.h"
#include "nvalchemi_step_engine.h"

#include <algorithm>
#include <memory>
#include <string>
#include <vector>

using namespace LAMMPS_NS;

#ifdef NVALCHEMI_PLUGIN
static constexpr const char *BUILD_ROUTE = "plugin";
#else
static constexpr const char *BUILD_ROUTE = "built-in";
#endif

// per-atom values moved by one communication pass when the spec declares no wider feature
// (3: forces and other vectors)
static constexpr int MIN_COMM_COLUMNS = 3;

// the step engine (model, graphs, outputs) and what the LAMMPS side keeps between steps
struct PairNVAlchemi::State : public NVAlchemi::StepEngine {
  std::unique_ptr<NVAlchemi::PairAtomComm> atom_comm;    // per-atom arrays, for the exchange ops
  bigint inits = 0;    // runs initialized: LAMMPS' count of list builds restarts at each
  NVAlchemi::MemoryCheck memory_check;    // halo deep on several ranks
  bool narrow_comm_reported = false, cuda_graph_problem_reported = false;
  bool nofdotr_implied = false;    // this style set no_virial_fdotr_compute for the model
};

/* ----------------------------------------------------------------------
   the engine's errors: what the spec does not declare stops every rank
   together; a failure that may be on this rank only (a model call, its
   outputs) stops every rank without waiting for the others (error->one)
------------------------------------------------------------------------- */

template <typename F> void PairNVAlchemi::stop_on_error(const char *what, F &&body)
{
  try {
    body();
  } catch (LAMMPSException &) {
    throw;    // a LAMMPS error, raised as the caller meant it
  } catch (NVAlchemi::CollectiveError &e) {
    error->all(FLERR, Error::NOLASTLINE, e.what());
  } catch (std::exception &e) {
    error->one(FLERR, Error::NOLASTLINE, "pair_style nvalchemi: model {}{} on step {}: {}",
               state->model_file, what, update->ntimestep, e.what());
  }
}

/* ---------------------------------------------------------------------- */

PairNVAlchemi::PairNVAlchemi(LAMMPS *lmp) :
    Pair(lmp), state(new State), cutoff(0.0), saved_cutghostuser(-1.0)
{
  single_enable = 0;
  restartinfo = 0;
  one_coeff = 1;
  manybody_flag = 1;
  comm_forward = MIN_COMM_COLUMNS;
  comm_reverse = MIN_COMM_COLUMNS;
  // per-atom virials are split evenly between the two atoms of each edge, which is not the
  // centroid form of a many-body model
  centroidstressflag = CENTROID_NOTAVAIL;
}

/* ---------------------------------------------------------------------- */

PairNVAlchemi::~PairNVAlchemi()
{
  // a halo mode raised the ghost cutoff: give the next pair style the user's setting back
  if (saved_cutghostuser >= 0.0) comm->cutghostuser = saved_cutghostuser;
  delete state;
  if (allocated) {
    memory->destroy(setflag);
    memory->destroy(cutsq);
    memory->destroy(cutghost);
  }
}

/* ---------------------------------------------------------------------- */

void PairNVAlchemi::allocate()
{
  allocated = 1;
  const int n = atom->ntypes + 1;
  memory->create(setflag, n, n, "pair:setflag");
  memory->create(cutsq, n, n, "pair:cutsq");
  memory->create(cutghost, n, n, "pair:cutghost");
  map = new int[n];    // freed by Pair::~Pair()
}

/* ---------------------------------------------------------------------- */

std::vector<PairNVAlchemi *> PairNVAlchemi::instances(Force *force)
{
  // pair_match returns a plain (not hybrid) style for every n
  std::vector<PairNVAlchemi *> found;
  for (int n = 1;; ++n) {
    auto *pair = dynamic_cast<PairNVAlchemi *>(force->pair_match("^nvalchemi", 0, n));
    if (!pair || std::find(found.begin(), found.end(), pair) != found.end()) return found;
    found.push_back(pair);
  }
}

/* ----------------------------------------------------------------------
   pair_style nvalchemi <model.pt> [keywords] (NVAlchemi::setup_pair_model)
------------------------------------------------------------------------- */

void PairNVAlchemi::settings(int narg, char **arg)
{
  NVAlchemi::setup_pair_model(lmp, narg, arg, *state);
  apply_model();

  // a re-issued pair_style may bring a model with other species: require a new pair_coeff
  if (allocated)
    for (int i = 1; i <= atom->ntypes; ++i)
      for (int j = i; j <= atom->ntypes; ++j) setflag[i][j] = 0;
}

/* ----------------------------------------------------------------------
   what the loaded model sets in the pair style and its engine: virial,
   communication widths, cutoff, where graphs are built, halo mode
------------------------------------------------------------------------- */

void PairNVAlchemi::apply_model()
{
  State &s = *state;
  cutoff = s.cutoff = s.units.run_length(s.metadata.cutoff);
  s.atom_comm = std::make_unique<NVAlchemi::PairAtomComm>(lmp, this);
  s.use(make_rank_graph(), *s.atom_comm, world, atom->tag_enable != 0);
  ghostneigh = s.halo().ghost_receivers() ? 1 : 0;
  s.memory_check.reset();
  s.narrow_comm_reported = false;

  // A model that brings its forces and declares its own global virial: that is the global
  // virial (pair_modify nofdotr implied). F dot r would miss what the energy owes to positions
  // and cell directly, as reciprocal-space sums do. A graph kept where the model runs has the
  // edges' virial summed there.
  const bool model_virial = !s.share.differentiate && NVAlchemi::declares_model_virial(s.spec);
  const bool nofdotr = model_virial || (s.share.differentiate && s.rank_graph().resident());
  if (nofdotr)
    no_virial_fdotr_compute = 1;
  else if (s.nofdotr_implied)
    no_virial_fdotr_compute = 0;
  s.nofdotr_implied = nofdotr;

  // one communication pass moves a row of the widest feature the model exchanges; set here, not
  // in init_style, because pair_style hybrid takes its sub-styles' widths when it is defined
  comm_forward = comm_reverse = std::max(MIN_COMM_COLUMNS, *s.spec.exchange_feature_width);
  NVAlchemi::log_pair_model(lmp, s, BUILD_ROUTE, cutoff);
}

std::unique_ptr<NVAlchemi::RankGraph> PairNVAlchemi::make_rank_graph()
{
  if (state->graph_on_device) return std::make_unique<NVAlchemi::TorchRankGraph>(state->device);
  return std::make_unique<NVAlchemi::HostRankGraph>();
}

/* ----------------------------------------------------------------------
   pair_coeff * * <element or NULL for each atom type>
------------------------------------------------------------------------- */

void PairNVAlchemi::coeff(int narg, char **arg)
{
  if (!allocated) allocate();
  NVAlchemi::check_pair_coeff_args(lmp, narg, arg, atom->ntypes);
  map_element2type(narg - 2, arg + 2);

  state->atomic_number_of_type =
      NVAlchemi::atomic_numbers_of_types(lmp, *state, nelements, elements, map, atom->ntypes);
}

/* ---------------------------------------------------------------------- */

void PairNVAlchemi::init_style()
{
  ++state->inits;                      // LAMMPS' count of neighbor list builds starts again
  state->synchronize_phases(false);    // until a fix nvalchemi/dd asks, in its init after this
  NVAlchemi::check_pair_settings(lmp, *state, this, offset_flag != 0, tail_flag != 0);
  // on one rank halo deep folds periodic images, which needs atom IDs: atom_modify id no may
  // have come after pair_style
  if (state->halo().folds_images() && atom->tag_enable == 0) {
    state->remake_halo(*state->atom_comm, world, false);
    ghostneigh = state->halo().ghost_receivers() ? 1 : 0;
  }
  request_neighbor_list();
  NVAlchemi::init_halo(lmp, *state, state->halo(), cutoff, saved_cutghostuser);
  NVAlchemi::ModelRunner::set_num_threads(state->threads > 0 ? state->threads : comm->nthreads);
}

/* ----------------------------------------------------------------------
   ghost receivers (halo deep): a full list of owned and ghost atoms; else a
   half list without newton (each owned pair once gives both edges)
------------------------------------------------------------------------- */

void PairNVAlchemi::request_neighbor_list()
{
  neighbor->add_request(
      this, ghostneigh ? NeighConst::REQ_FULL | NeighConst::REQ_GHOST : NeighConst::REQ_NEWTON_OFF);
}

/* ---------------------------------------------------------------------- */

double PairNVAlchemi::init_one(int i, int j)
{
  if (ghostneigh) cutghost[i][j] = cutghost[j][i] = cutoff;
  return cutoff;
}

/* ----------------------------------------------------------------------
   one model call per step, then energy, forces and virial as the spec says;
   a member that does not drive (drive no) runs when compute asks
------------------------------------------------------------------------- */

void PairNVAlchemi::compute(int eflag, int vflag)
{
  ev_init(eflag, vflag);
  State &s = *state;
  ++s.force_calls;
  if (!s.drives) return;

  evaluate_model(eflag_atom || vflag_atom || !s.share.differentiate);
  const double tally_start = platform::walltime();
  tally_energy();
  tally_forces();
  if (vflag_fdotr) virial_fdotr_compute();
  NVAlchemi::StepSummary &step = s.last_step();
  step.tally = platform::walltime() - tally_start;
  step.glue += step.tally;
}

/* ----------------------------------------------------------------------
   the model on this force evaluation's configuration, once (collective:
   every rank counts the same force evaluations)
------------------------------------------------------------------------- */

void PairNVAlchemi::evaluate_configuration()
{
  State &s = *state;
  if (s.force_calls == 0)
    error->all(FLERR, Error::NOLASTLINE,
               "pair_style nvalchemi model {} asked for before the first force evaluation of a "
               "run",
               s.model_file);
  if (s.evaluated_call == s.force_calls) return;
  evaluate_model(true);
}

/* ----------------------------------------------------------------------
   the engine's phases, and what needs LAMMPS between them; outputs in rows
   of this rank's atoms, on the host when `host_outputs`
------------------------------------------------------------------------- */

void PairNVAlchemi::evaluate_model(bool host_outputs)
{
  State &s = *state;
  const double start = platform::walltime();
  begin_evaluation();
  s.volume = domain->xprd * domain->yprd * domain->zprd;
  const NVAlchemi::RowIds ids = [&](int64_t row) {
    return static_cast<int64_t>(atom->tag[s.graph().row_atom[row]]);
  };
  NVAlchemi::Graph *model_graph = nullptr;
  stop_on_error(" failed building its graph", [&] {
    model_graph =
        &s.build(NVAlchemi::atoms_view(atom, s.atomic_number_of_type.data()),
                 NVAlchemi::neighbor_view(list, ghostneigh), {s.inits, neighbor->ncalls}, ids);
  });
  // halo deep on several ranks, at each new list: the host memory the model call needs against
  // what the node has (every rank takes part; one on a GPU with no need)
  if (s.halo().ghost_receivers() && comm->nprocs > 1 && s.list_was_new())
    s.memory_check.check(lmp, s, *model_graph, NVAlchemi::box_cell(domain), !s.device.is_gpu(),
                         [&] {
                           s.graph_to_host();
                         });
  int64_t need[2];
  if (*s.spec.compile.static_shapes && s.pad_to_capacity(*model_graph, world, need) &&
      comm->me == 0)
    utils::logmesg(lmp,
                   "pair_style nvalchemi: static shapes: {} rows and {} edges per rank from step "
                   "{} (the most any rank needs: {} rows, {} edges)\n",
                   s.row_capacity(), s.edge_capacity(), update->ntimestep, need[0], need[1]);
  s.last_step().graph = platform::walltime() - start;

  const int captures = s.cuda_graph ? s.model->cuda_graphs().captures() : 0;
  stop_on_error(" failed", [&] {
    s.call_model(*model_graph, NVAlchemi::box_cell(domain));
  });
  NVAlchemi::check_exchange_calls(lmp, s, s.halo(), comm_forward, s.narrow_comm_reported);
  if (s.cuda_graph)
    NVAlchemi::report_cuda_graph(lmp, s, captures, *model_graph, s.cuda_graph_problem_reported);
  s.evaluated_call = s.force_calls;
  stop_on_error("", [&] {
    s.finish(host_outputs, ids);
  });
  NVAlchemi::StepSummary &step = s.last_step();
  step.tally = 0.0;
  step.glue = platform::walltime() - start - step.model - step.exchange;
}

/* ----------------------------------------------------------------------
   global energy: this rank's share (LAMMPS sums the ranks); per-atom
   energy as NVAlchemi::add_atom_energies consolidates it (ghost atoms'
   partials are summed into the owners by compute pe/atom)
------------------------------------------------------------------------- */

void PairNVAlchemi::tally_energy()
{
  if (eflag_global) eng_vdwl += state->outputs().energy_share;
  if (eflag_atom)
    stop_on_error("", [&] {
      state->add_atom_energies(eatom);
    });
}

/* ----------------------------------------------------------------------
   the forces that move the atoms, on the consolidation path that validate
   checks too (NVAlchemi::consolidate_forces): edge forces where the rank
   graph is kept (ghost forces go home by reverse comm), the model's forces
   on their rows, the global virial as the spec says; per-atom virials as
   NVAlchemi::add_atom_virials consolidates them
------------------------------------------------------------------------- */

struct PairNVAlchemi::Tally : public NVAlchemi::ForceConsumer {
  explicit Tally(PairNVAlchemi *pair) : pair(pair) {}
  void edge_forces(const NVAlchemi::Graph &graph, const NVAlchemi::ModelOutputs &outputs,
                   double *virial) override
  { pair->state->rank_graph().add_edge_forces(graph, outputs, pair->atom->f, virial); }
  void row_forces(const NVAlchemi::Graph &graph, const double *forces, int64_t rows,
                  double weight) override
  {
    double **f = pair->atom->f;
    for (int64_t r = 0; r < rows; ++r)
      for (int d = 0; d < 3; ++d) f[graph.row_atom[r]][d] += weight * forces[3 * r + d];
  }
  bool wants_virial() const override { return pair->vflag_global != 0; }
  void virial(const double w[6]) override
  {
    for (int v = 0; v < 6; ++v) pair->virial[v] += w[v];
  }
  PairNVAlchemi *pair;
};

void PairNVAlchemi::tally_forces()
{
  Tally tally(this);
  stop_on_error("", [&] {
    state->tally_forces(tally, vflag_atom ? vatom : nullptr);
  });
}

/* ---------------------------------------------------------------------- */

const double *PairNVAlchemi::consolidated_output(const char *name, bool peratom, int n)
{
  const double *values = nullptr;
  stop_on_error("", [&] {
    values = state->consolidated(name, peratom, n, *state->atom_comm);
  });
  return values;
}

/* ----------------------------------------------------------------------
   the passes of the exchange ops' per-atom communication
------------------------------------------------------------------------- */

int PairNVAlchemi::pack_forward_comm(int n, int *list, double *buf, int /*pbc_flag*/, int * /*pbc*/)
{ return state->atom_comm->pack_forward(n, list, buf); }

void PairNVAlchemi::unpack_forward_comm(int n, int first, double *buf)
{ state->atom_comm->unpack_forward(n, first, buf); }

int PairNVAlchemi::pack_reverse_comm(int n, int first, double *buf)
{ return state->atom_comm->pack_reverse(n, first, buf); }

void PairNVAlchemi::unpack_reverse_comm(int n, int *list, double *buf)
{ state->atom_comm->unpack_reverse(n, list, buf); }

/* ----------------------------------------------------------------------
   the last evaluation's share of energy, forces and virial, summed over
   ranks; ghost-row forces go home by reverse communication
------------------------------------------------------------------------- */

void PairNVAlchemi::decomposed_contribution(NVAlchemi::Contribution &c)
{
  State &s = *state;
  if (s.evaluations() == 0)
    error->all(FLERR, Error::NOLASTLINE, "pair_style nvalchemi has not run its model yet");
  stop_on_error("", [&] {
    s.to_host();
    NVAlchemi::decomposed_contribution(s.result(), atom->nlocal, *s.atom_comm, c, s.row_forces);
  });
}

void PairNVAlchemi::reference_contribution(const std::vector<double> &x,
                                           const std::vector<int> &type, NVAlchemi::Contribution &c)
{
  try {
    c = state->reference(x, type, NVAlchemi::box_cell(domain));
  } catch (std::exception &e) {
    error->one(FLERR, Error::NOLASTLINE,
               "pair_style nvalchemi: model {} failed on the single-process reference: {}",
               state->model_file, e.what());
  }
}

NVAlchemi::StepEngine &PairNVAlchemi::engine() const
{ return *state; }

/* ---------------------------------------------------------------------- */

double PairNVAlchemi::memory_usage()
{ return Pair::memory_usage() + state->memory_bytes(); }
