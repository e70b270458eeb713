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

#include "nvalchemi_consolidate.h"
#include "nvalchemi_dd_reference.h"
#include "nvalchemi_graph.h"
#include "nvalchemi_halo.h"
#include "nvalchemi_halo_atom_comm.h"
#include "nvalchemi_halo_exchange_checks.h"
#include "nvalchemi_lammps.h"
#include "nvalchemi_model_metadata.h"
#include "nvalchemi_pair_memory.h"
#include "nvalchemi_pair_model.h"
#include "nvalchemi_runner.h"
#include "nvalchemi_runner_graph.h"
#include "nvalchemi_spec.h"

#include <algorithm>
#include <array>
#include <cstring>
#include <map>
#include <memory>
#include <stdexcept>
#include <string>
#include <vector>

using namespace LAMMPS_NS;
using NVAlchemi::OutputKind;

#ifdef NVALCHEMI_PLUGIN
static constexpr const char *BUILD_ROUTE = "plugin";
#else
static constexpr const char *BUILD_ROUTE = "built-in";
#endif

// per-atom values moved by one communication pass when the spec declares no wider feature
// (3: forces and other vectors)
static constexpr int MIN_COMM_COLUMNS = 3;

// the model (NVAlchemi::PairModel) and what one step builds and keeps
struct PairNVAlchemi::State : public NVAlchemi::PairModel {
  std::vector<int> atomic_number_of_type;    // [ntypes+1], 0 for NULL types
  NVAlchemi::Graph graph;
  std::vector<int> atom_row;
  // graph device: the builder, and the neighbor list it last took (the run's init, LAMMPS'
  // count of list builds since, and the list's and atoms' sizes)
  std::unique_ptr<NVAlchemi::DeviceGraph> device_graph;
  bigint inits = 0;
  std::array<bigint, 5> list_taken{};
  bool synchronized_phases = false;    // synchronize_phases()
  bool cuda_graph_problem_reported = false;
  int64_t row_capacity = 0, edge_capacity = 0;    // static shapes: padded sizes so far
  std::vector<double> row_forces;                 // [rows][3] scratch
  std::unique_ptr<NVAlchemi::PairAtomComm> atom_comm;    // per-atom arrays, for the exchange ops
  // the halo mode: the neighbor list and ghost cutoff it needs, the graph the model sees, the
  // exchange ops' implementation
  std::unique_ptr<NVAlchemi::Halo> halo;
  bool narrow_comm_reported = false;
  // halo deep on several ranks: the host memory the model call needs, checked at each new list
  NVAlchemi::MemoryCheck memory_check;
  std::array<bigint, 2> memory_checked_list{-1, -1};
  bool nofdotr_implied = false;    // this style set no_virial_fdotr_compute for the model
  NVAlchemi::ModelOutputs outputs;
  bigint evaluations = 0;
  bigint force_calls = 0;       // compute() calls: one per force evaluation of the run
  bigint evaluated_call = -1;   // the force evaluation whose configuration the model last ran on
  // consolidated extra outputs and the evaluation they belong to
  struct Consolidated {
    std::vector<double> values;
    bigint evaluation = -1;
  };
  std::map<std::string, Consolidated> consolidated;

  NVAlchemi::RankResult result(const Domain *domain, int nprocs) const
  {
    return {spec, share, graph, outputs, domain->xprd * domain->yprd * domain->zprd, nprocs};
  }
};

namespace {
// Runs `body`, whose checks read this rank's model outputs: a failure there may be on this rank
// only, so it stops every rank without a collective (error->one), never leaving the others
// waiting in one.
template <typename F>
void stop_on_output_error(LAMMPS *lmp, const std::string &model_file, F &&body)
{
  try {
    body();
  } catch (NVAlchemi::OutputError &e) {
    lmp->error->one(FLERR, Error::NOLASTLINE, "pair_style nvalchemi: model {} on step {}: {}",
                    model_file, lmp->update->ntimestep, e.what());
  }
}
}    // namespace

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
  state->device_graph.reset();    // made for the device of this pair_style at its first step
  apply_model();

  // a re-issued pair_style may bring a model with other species: require a new pair_coeff
  if (allocated)
    for (int i = 1; i <= atom->ntypes; ++i)
      for (int j = i; j <= atom->ntypes; ++j) setflag[i][j] = 0;
}

/* ----------------------------------------------------------------------
   what the loaded model sets in the pair style: virial, communication
   widths, cutoff, halo mode
------------------------------------------------------------------------- */

void PairNVAlchemi::apply_model()
{
  State &s = *state;
  const NVAlchemi::ModelMetadata &meta = s.metadata;
  const NVAlchemi::MLIPSpec &spec = s.spec;

  // A model that brings its forces and declares its own global virial: that is the global
  // virial (pair_modify nofdotr implied). F dot r would miss what the energy owes to positions
  // and cell directly, as reciprocal-space sums do. A variant that keeps the forces off the
  // host sums the edges' virial where they are.
  const bool model_virial = !s.share.differentiate && NVAlchemi::declares_model_virial(spec);
  const bool nofdotr = model_virial || (s.share.differentiate && virial_from_edges());
  if (nofdotr) no_virial_fdotr_compute = 1;
  else if (s.nofdotr_implied) no_virial_fdotr_compute = 0;
  s.nofdotr_implied = nofdotr;

  // one communication pass moves a row of the widest feature the model exchanges; set here, not
  // in init_style, because pair_style hybrid takes its sub-styles' widths when it is defined
  comm_forward = comm_reverse = std::max(MIN_COMM_COLUMNS, *spec.exchange_feature_width);
  cutoff = s.units.run_length(meta.cutoff);
  s.atom_comm = std::make_unique<NVAlchemi::PairAtomComm>(lmp, this);
  make_halo();
  s.memory_check.reset();
  s.narrow_comm_reported = false;
  s.row_capacity = s.edge_capacity = 0;

  if (comm->me == 0) {
    std::string species;
    for (int z : meta.species) species += " " + NVAlchemi::element_symbol(z);
    utils::logmesg(lmp,
                   "pair_style nvalchemi ({}): model {} ({}), contract v{}, units {}, {}, cutoff "
                   "{}, species:{}\neffective spec:\n{}\n",
                   BUILD_ROUTE, s.model_file, s.model->format(), meta.contract_version, meta.units,
                   meta.dtype, meta.cutoff, species, spec.to_json(2));
    if (s.units.converts())
      utils::logmesg(lmp,
                     "pair_style nvalchemi: model {} works in {} units: converted to {} (length "
                     "x{:.12g} into the model, energy x{:.12g} and forces x{:.12g} out of it, "
                     "cutoff {:.12g})\n",
                     s.model_file, meta.units, update->unit_style, s.units.length, s.units.energy,
                     s.units.force(), cutoff);
    if (s.graph_on_device)
      utils::logmesg(lmp,
                     "pair_style nvalchemi: graph device: each step's graph is built on {}, where "
                     "the model runs\n",
                     s.device.is_gpu() ? "the GPU" : "the CPU with LibTorch's operators");
  }
}

/* ----------------------------------------------------------------------
   the halo mode's object; on one rank halo deep folds periodic images, which
   needs atom IDs: made again at init when atom_modify id no came after
   pair_style
------------------------------------------------------------------------- */

void PairNVAlchemi::make_halo()
{
  State &s = *state;
  s.halo = NVAlchemi::make_halo(
      *s.spec.halo,
      [this, &s](bool complete) { return make_row_exchange(s.graph, *s.atom_comm, complete); },
      world, atom->tag_enable != 0);
  ghostneigh = s.halo->ghost_receivers() ? 1 : 0;
}

/* ----------------------------------------------------------------------
   pair_coeff * * <element or NULL for each atom type>
------------------------------------------------------------------------- */

void PairNVAlchemi::coeff(int narg, char **arg)
{
  if (!allocated) allocate();
  const int ntypes = atom->ntypes;
  // inputs written for pair_style mace, e3gnn or allegro name the model file here
  for (int i = 2; i < narg; ++i)
    if (strcmp(arg[i], "NULL") != 0 && NVAlchemi::atomic_number(arg[i]) == 0 &&
        (strchr(arg[i], '.') || strchr(arg[i], '/')))
      error->all(FLERR, i,
                 "pair_coeff nvalchemi takes an element symbol or NULL for each atom type, and "
                 "'{}' looks like a model file: pair_style nvalchemi names the model ('pair_style "
                 "nvalchemi <model file>'); drop the file from pair_coeff",
                 arg[i]);
  if (narg != 2 + ntypes)
    error->all(FLERR,
               "Incorrect number of args for pair_coeff nvalchemi: expected '* *' followed by "
               "{} element symbols or NULL (one per atom type), got {} args",
               ntypes, narg);
  if (strcmp(arg[0], "*") != 0 || strcmp(arg[1], "*") != 0)
    error->all(FLERR, "pair_coeff for pair_style nvalchemi must start with '* *'");

  map_element2type(narg - 2, arg + 2);

  const NVAlchemi::ModelMetadata &meta = state->metadata;
  std::vector<int> element_z(nelements);
  for (int e = 0; e < nelements; ++e) {
    const int z = NVAlchemi::atomic_number(elements[e]);
    if (z == 0)
      error->all(FLERR, "pair_coeff nvalchemi: '{}' is not a chemical element symbol (or NULL)",
                 elements[e]);
    if (std::find(meta.species.begin(), meta.species.end(), z) == meta.species.end()) {
      std::string known;
      for (int s : meta.species) known += " " + NVAlchemi::element_symbol(s);
      error->all(FLERR, "Model {} has no parameters for element {}; it knows:{}", state->model_file,
                 elements[e], known);
    }
    element_z[e] = z;
  }
  state->atomic_number_of_type.assign(ntypes + 1, 0);
  for (int t = 1; t <= ntypes; ++t)
    if (map[t] >= 0) state->atomic_number_of_type[t] = element_z[map[t]];
}

/* ---------------------------------------------------------------------- */

void PairNVAlchemi::init_style()
{
  ++state->inits;    // LAMMPS' count of neighbor list builds starts again
  synchronize_phases(false);    // until a fix nvalchemi/dd asks, in its init after this
  if (force->newton_pair == 0)
    error->all(FLERR, Error::NOLASTLINE,
               "Pair style nvalchemi requires newton pair on: ghost-atom forces are sent to "
               "their owners by reverse communication (delete newton off, which inputs written "
               "for pair_style nequip set)");
  // the model defines its own cutoff behaviour: options that would change it are refused
  if (offset_flag)
    error->all(FLERR, Error::NOLASTLINE,
               "Pair style nvalchemi cannot shift its energy (pair_modify shift yes): the model "
               "defines its own cutoff behaviour; use pair_modify shift no");
  if (tail_flag)
    error->all(FLERR, Error::NOLASTLINE,
               "Pair style nvalchemi has no tail correction (pair_modify tail yes): the model "
               "defines its own cutoff behaviour; use pair_modify tail no");
  if (!state->drives && force->pair == this)
    error->all(FLERR, Error::NOLASTLINE,
               "pair_style nvalchemi {} drive no adds nothing to the dynamics: use it as a "
               "sub-style of pair_style hybrid/overlay beside the model that drives, as a "
               "committee member of compute nvalchemi/deviation",
               state->model_file);
  if (state->halo->folds_images() && atom->tag_enable == 0) make_halo();
  const NVAlchemi::Halo &halo = *state->halo;
  const std::string mode = NVAlchemi::to_string(halo.mode());
  if (halo.maps_atoms_by_id() && atom->tag_enable == 0)
    error->all(FLERR, Error::NOLASTLINE,
               "Halo mode '{}' of pair style nvalchemi maps ghost atoms to their atoms' rows by "
               "atom ID: use atom_modify id yes (the default) before the box is defined",
               mode);
  request_neighbor_list();
  const int layers = *state->spec.num_message_passing_layers;
  const double ghost_cutoff = halo.ghost_cutoff(cutoff, neighbor->skin, layers);
  if (ghost_cutoff > 0.0) {
    if (saved_cutghostuser < 0.0) saved_cutghostuser = comm->cutghostuser;
    comm->cutghostuser = std::max(saved_cutghostuser, ghost_cutoff);
    if (comm->me == 0)
      utils::logmesg(lmp,
                     "pair_style nvalchemi: halo mode {} raises the ghost cutoff to {:.8g} "
                     "({} layers x cutoff {} + skin {})\n",
                     mode, comm->cutghostuser, std::max(1, layers), cutoff, neighbor->skin);
  } else {
    if (saved_cutghostuser >= 0.0) comm->cutghostuser = saved_cutghostuser;
    saved_cutghostuser = -1.0;
  }
  if (halo.folds_images() && comm->me == 0)
    utils::logmesg(lmp,
                   "pair_style nvalchemi: halo mode {} on one rank folds periodic images onto "
                   "the atoms they image: the model sees the {} atoms of the cell, each image's "
                   "edge carrying its lattice shift, and no ghost shell of {} layers\n",
                   mode, atom->natoms, std::max(1, layers));
  NVAlchemi::ModelRunner::set_num_threads(state->threads > 0 ? state->threads : comm->nthreads);
}

/* ----------------------------------------------------------------------
   ghost receivers (halo mode deep): a full list of owned and ghost atoms;
   else a half list without newton: each pair of owned atoms once (both
   edges come from it), each owned-ghost pair on both ranks, half the
   distances of a full list
------------------------------------------------------------------------- */

void PairNVAlchemi::request_neighbor_list()
{
  neighbor->add_request(this, ghostneigh ? NeighConst::REQ_FULL | NeighConst::REQ_GHOST
                                         : NeighConst::REQ_NEWTON_OFF);
}

/* ---------------------------------------------------------------------- */

double PairNVAlchemi::init_one(int i, int j)
{
  if (ghostneigh) cutghost[i][j] = cutghost[j][i] = cutoff;
  return cutoff;
}

/* ----------------------------------------------------------------------
   one model call per step on owned + ghost rows, then consolidation of
   energy, forces and virial as the spec says (doc/Howto_nvalchemi_spec.rst);
   a committee member that does not drive the dynamics (drive no) adds
   nothing and runs its model only when compute nvalchemi/deviation asks
------------------------------------------------------------------------- */

void PairNVAlchemi::compute(int eflag, int vflag)
{
  ev_init(eflag, vflag);
  State &s = *state;
  ++s.force_calls;
  if (!s.drives) return;

  const double start = platform::walltime();
  const double model_seconds = evaluate_model(eflag_atom || vflag_atom || !s.share.differentiate);
  const double tally_start = platform::walltime();
  stop_on_output_error(lmp, s.model_file, [&] {
    tally_energy();
    tally_forces();
  });
  if (vflag_fdotr) virial_fdotr_compute();
  summary.tally = platform::walltime() - tally_start;
  summary.glue = platform::walltime() - start - model_seconds + s.outputs.marshal_seconds;
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
  const double start = platform::walltime();
  const double model_seconds = evaluate_model(true);
  summary.tally = 0.0;
  summary.glue = platform::walltime() - start - model_seconds + s.outputs.marshal_seconds;
}

bool PairNVAlchemi::drives_dynamics() const
{ return state->drives; }

bigint PairNVAlchemi::force_evaluations() const
{ return state->force_calls; }

/* ----------------------------------------------------------------------
   this rank's graph, the model call with its exchange ops and the checks of
   what it returned, outputs in rows of this rank's atoms (on the host when
   `host_outputs`, or when a variant keeps them elsewhere and a check needs
   them); the seconds in the model call
------------------------------------------------------------------------- */

double PairNVAlchemi::evaluate_model(bool host_outputs)
{
  const double start = platform::walltime();
  State &s = *state;
  begin_evaluation();
  build_rank_graph(s.graph);
  if (s.halo->makes_model_graph()) graph_to_host(s.graph);
  NVAlchemi::Graph &model_graph = halo_model_graph();
  check_memory(model_graph);
  if (*s.spec.compile.static_shapes) pad_to_capacity(model_graph);
  summary.graph = platform::walltime() - start;

  NVAlchemi::MeasuredExchanger &exchange = s.halo->exchanger();
  exchange.seconds = 0.0;
  exchange.refreshes = 0;
  exchange.start_evaluation();
  const double model_start = platform::walltime();
  const int captures = s.model->cuda_graph_captures();
  try {
    s.model->evaluate(model_graph, NVAlchemi::box_cell(domain), s.share, &exchange, s.outputs);
    exchange.agree(NVAlchemi::ExchangeCall::RETURNED, 0);
    // cuda_graph yes: the calls are captured once the ranks agree that one made no exchange call
    // (a replay makes none either: the host's communication is not in the graph)
    if (s.cuda_graph) s.model->set_cuda_graph(exchange.point().calls == 0);
  } catch (std::exception &e) {
    if (!exchange.mismatched())
      error->one(FLERR, Error::NOLASTLINE, "pair_style nvalchemi: model {} failed on step {}: {}",
                 s.model_file, update->ntimestep, e.what());
  }
  NVAlchemi::check_exchange_calls(lmp, s, *s.halo, comm_forward, s.narrow_comm_reported);
  if (s.cuda_graph) report_cuda_graph(captures, model_graph);
  // the consolidation reads rows of this rank's atoms
  s.halo->to_rank_rows(s.spec, s.graph, s.outputs);
  const double model_seconds = platform::walltime() - model_start;
  ++s.evaluations;
  s.evaluated_call = s.force_calls;
  NVAlchemi::provide_framework_outputs(s.spec, s.share, s.outputs);
  step_to_host(s.graph, s.outputs, host_outputs);
  stop_on_output_error(lmp, s.model_file, [&] {
    NVAlchemi::check_finite(s.spec, s.share, s.graph, s.outputs, [&](int64_t row) {
      return static_cast<int64_t>(atom->tag[s.graph.row_atom[row]]);
    });
  });

  summary.exchange = exchange.seconds;
  summary.model = model_seconds - summary.exchange - s.outputs.marshal_seconds;
  summary.tensors = s.outputs.marshal_seconds;
  summary.forward = s.outputs.forward_seconds;
  summary.backward = s.outputs.backward_seconds;
  summary.edges = s.graph.num_edges();
  return model_seconds;
}

/* ----------------------------------------------------------------------
   this rank's graph: owned and ghost atoms, edges from the neighbor list
------------------------------------------------------------------------- */

void PairNVAlchemi::build_rank_graph(NVAlchemi::Graph &graph)
{
  State &s = *state;
  const int nlocal = atom->nlocal;
  const NVAlchemi::AtomsView atoms{atom->x, atom->type, s.atomic_number_of_type.data(), nlocal,
                                   nlocal + atom->nghost};
  const NVAlchemi::NeighborView neighbors{list->inum,       ghostneigh ? list->gnum : 0,
                                          list->ilist,      list->numneigh,
                                          list->firstneigh, NEIGHMASK,
                                          !ghostneigh};
  if (!s.graph_on_device) {
    NVAlchemi::build_graph(atoms, neighbors, cutoff, graph, s.atom_row);
    return;
  }
  // the list is new when LAMMPS built it since the builder last took one (a new run's init
  // restarts LAMMPS' count of builds)
  const std::array<bigint, 5> list_now{s.inits, neighbor->ncalls, atoms.nlocal, atoms.nall,
                                       neighbors.inum + neighbors.gnum};
  const bool list_is_new = list_now != s.list_taken;
  s.list_taken = list_now;
  if (!s.device_graph) {
    s.device_graph = std::make_unique<NVAlchemi::DeviceGraph>(s.device);
    s.device_graph->set_synchronized_phases(s.synchronized_phases);
  }
  try {
    s.device_graph->build(atoms, neighbors, cutoff, list_is_new, graph, s.atom_row);
  } catch (std::exception &e) {
    error->one(FLERR, Error::NOLASTLINE,
               "pair_style nvalchemi: building the graph on {} failed on step {}: {}",
               s.device.str(), update->ntimestep, e.what());
  }
}

/* ----------------------------------------------------------------------
   the graph the model sees: this rank's graph, or one the halo mode makes
   from it (collective in halo mode gp)
------------------------------------------------------------------------- */

NVAlchemi::Graph &PairNVAlchemi::halo_model_graph()
{
  State &s = *state;
  try {
    return s.halo->model_graph(s.graph, [&](int64_t row) {
      return static_cast<int64_t>(atom->tag[s.graph.row_atom[row]]);
    });
  } catch (std::exception &e) {
    error->one(FLERR, Error::NOLASTLINE, "pair_style nvalchemi: model {} on step {}: {}",
               s.model_file, update->ntimestep, e.what());
  }
}

/* ----------------------------------------------------------------------
   halo deep on several ranks: the host memory the model call needs against
   what the node has, when LAMMPS built a new list (every rank does:
   collective), before the model allocates
------------------------------------------------------------------------- */

void PairNVAlchemi::check_memory(const NVAlchemi::Graph &model_graph)
{
  State &s = *state;
  if (!s.halo->ghost_receivers() || comm->nprocs == 1) return;
  const std::array<bigint, 2> list_now{s.inits, neighbor->ncalls};
  if (list_now == s.memory_checked_list) return;
  s.memory_checked_list = list_now;
  // every rank takes part (a rank on a GPU, whose allocator raises its own error, with no need)
  s.memory_check.check(lmp, s, model_graph, NVAlchemi::box_cell(domain), !s.device.is_gpu(),
                       [&] { graph_to_host(s.graph); });
}

/* ----------------------------------------------------------------------
   static shapes: the model's inputs padded to capacities that only grow,
   the same on every rank (grown together from the largest need), so that a
   rank never overflows alone (doc/pair_nvalchemi.rst)
------------------------------------------------------------------------- */

void PairNVAlchemi::pad_to_capacity(NVAlchemi::Graph &graph)
{
  State &s = *state;
  int64_t need[2] = {graph.num_rows(), graph.num_edges()};
  MPI_Allreduce(MPI_IN_PLACE, need, 2, MPI_INT64_T, MPI_MAX, world);
  // rows strictly above the need: the last row is the dead row that padding edges loop on
  const int64_t rows = NVAlchemi::grown_capacity(s.row_capacity, need[0],
                                                 *s.spec.compile.atom_capacity_growth, true);
  const int64_t edges = NVAlchemi::grown_capacity(s.edge_capacity, need[1],
                                                  *s.spec.compile.edge_capacity_growth, false);
  if (comm->me == 0 && (rows != s.row_capacity || edges != s.edge_capacity))
    utils::logmesg(lmp,
                   "pair_style nvalchemi: static shapes: {} rows and {} edges per rank from step "
                   "{} (the most any rank needs: {} rows, {} edges)\n",
                   rows, edges, update->ntimestep, need[0], need[1]);
  s.row_capacity = rows;
  s.edge_capacity = edges;
  pad_graph(graph, rows, edges);
}

void PairNVAlchemi::pad_graph(NVAlchemi::Graph &graph, int64_t rows, int64_t edges)
{
  State &s = *state;
  if (graph.resident.set && s.device_graph)
    s.device_graph->pad(graph, rows, edges, cutoff);
  else
    NVAlchemi::pad_graph(graph, rows, edges, cutoff);
}

/* ----------------------------------------------------------------------
   graph device: the graph's values on the host for host code (halo mode
   gp's graph, messages naming atoms); after the model call the gradients
   reduced on the device to row forces and the virial, and copied to the
   host when host code needs them or one is not finite (the check names it)
------------------------------------------------------------------------- */

void PairNVAlchemi::graph_to_host(NVAlchemi::Graph &graph)
{
  State &s = *state;
  if (graph.resident.set && s.device_graph) s.device_graph->to_host(graph);
}

void PairNVAlchemi::step_to_host(NVAlchemi::Graph &graph, NVAlchemi::ModelOutputs &outputs,
                                 bool needed)
{
  State &s = *state;
  if (!graph.resident.set || !s.device_graph) return;
  const NVAlchemi::SharedValues &resident = outputs.resident_edge_gradients;
  if (!resident.empty()) {
    s.device_graph->reduce_gradients(graph, resident);
    needed = needed || s.device_graph->non_finite_gradients() > 0;
  }
  if (!needed) return;
  s.device_graph->to_host(graph);
  if (!resident.empty() && outputs.edge_gradients.empty())
    s.device_graph->gradients_to_host(resident, outputs.edge_gradients);
}

/* ----------------------------------------------------------------------
   global energy: this rank's share (LAMMPS sums the ranks); per-atom
   energy as NVAlchemi::add_atom_energies consolidates it (ghost atoms'
   partials are summed into the owners by compute pe/atom)
------------------------------------------------------------------------- */

void PairNVAlchemi::tally_energy()
{
  if (!eflag_either) return;
  State &s = *state;
  if (eflag_global) eng_vdwl += s.outputs.energy_share;
  if (eflag_atom && !NVAlchemi::add_atom_energies(s.result(domain, comm->nprocs), eatom))
    error->all(FLERR, Error::NOLASTLINE,
               "Per-atom energy needs the spec of pair_style nvalchemi to declare the node "
               "energies '{}' as per_node",
               *s.spec.node_energy_key);
}

/* ----------------------------------------------------------------------
   the forces that move the atoms, on the consolidation path that validate
   checks too (NVAlchemi::consolidate_forces): edge forces through
   add_edge_forces (ghost forces go home by reverse comm), the model's
   forces on their rows, the global virial as the spec says; per-atom
   virials as NVAlchemi::add_atom_virials consolidates them
------------------------------------------------------------------------- */

struct PairNVAlchemi::Tally : public NVAlchemi::ForceConsumer {
  explicit Tally(PairNVAlchemi *pair) : pair(pair) {}
  void edge_forces(const NVAlchemi::Graph &graph, const NVAlchemi::ModelOutputs &outputs,
                   double *virial) override
  { pair->add_edge_forces(graph, outputs, virial); }
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
  State &s = *state;
  Tally tally(this);
  const NVAlchemi::RankResult result = s.result(domain, comm->nprocs);
  if (!NVAlchemi::consolidate_forces(result, tally))
    error->all(FLERR, Error::NOLASTLINE,
               "The global virial without F dot r (pair_modify nofdotr) with force strategy "
               "'model' needs the spec to declare model output 'virial' [1,3,3] or the "
               "toolkit's 'stress' [1,3,3] per_graph, or per-atom virials '{}' [N,3,3] per_node",
               *s.spec.node_virial_key);
  if (vflag_atom && !NVAlchemi::add_atom_virials(result, vatom)) {
    const std::string foreign = s.model->foreign_format();
    if (!foreign.empty())
      error->all(FLERR, Error::NOLASTLINE,
                 "Model {} is a {} file, which returns no per-atom virials (as that framework's "
                 "pair style, which refuses them too): drop compute stress/atom, or export the "
                 "model with nvalchemi-nequip-export",
                 s.model_file, foreign);
    error->all(FLERR, Error::NOLASTLINE,
               "Per-atom virials with force strategy 'model' need the spec to declare output "
               "'{}' per_node",
               *s.spec.node_virial_key);
  }
}

void PairNVAlchemi::add_edge_forces(const NVAlchemi::Graph &graph,
                                    const NVAlchemi::ModelOutputs &outputs, double *virial)
{
  State &s = *state;
  if (s.device_graph && !outputs.resident_edge_gradients.empty()) {
    // reduced on the device (step_to_host): forces of the rows, the virial
    NVAlchemi::DeviceGraph &dg = *s.device_graph;
    dg.reduce_gradients(graph, outputs.resident_edge_gradients);
    const double *forces = dg.row_forces();
    double **f = atom->f;
    for (int64_t r = 0, n = graph.num_rows(); r < n; ++r)
      for (int d = 0; d < 3; ++d) f[graph.row_atom[r]][d] += forces[3 * r + d];
    if (virial)
      for (int v = 0; v < 6; ++v) virial[v] += dg.virial()[v];
    return;
  }
  const double *g = outputs.host_edge_gradients();
  NVAlchemi::add_edge_forces(graph, g, atom->f);
  if (virial) NVAlchemi::add_edge_virial(graph, g, virial);
}

std::unique_ptr<NVAlchemi::MeasuredExchanger>
PairNVAlchemi::make_row_exchange(const NVAlchemi::Graph &rank_graph, NVAlchemi::AtomComm &atoms,
                                 bool complete)
{ return std::make_unique<NVAlchemi::RowExchange>(rank_graph, atoms, complete); }

void PairNVAlchemi::synchronize_phases(bool on)
{
  State &s = *state;
  s.synchronized_phases = on;
  if (s.model) s.model->set_synchronized_phases(on);
  if (s.device_graph) s.device_graph->set_synchronized_phases(on);
}

/* ----------------------------------------------------------------------
   cuda_graph yes: each capture in rank 0's log; a capture that failed (then
   the calls run uncaptured) in a warning of the rank, once
------------------------------------------------------------------------- */

void PairNVAlchemi::report_cuda_graph(int captures_before, const NVAlchemi::Graph &model_graph)
{
  State &s = *state;
  if (s.model->cuda_graph_captures() > captures_before && comm->me == 0)
    utils::logmesg(lmp,
                   "pair_style nvalchemi: the model's call captured as a CUDA graph on step {} "
                   "({} rows, {} edges), replayed while the shapes stay\n",
                   update->ntimestep, model_graph.tensor_rows(), model_graph.tensor_edges());
  if (!s.model->cuda_graph_problem().empty() && !s.cuda_graph_problem_reported) {
    s.cuda_graph_problem_reported = true;
    error->warning(FLERR, "pair_style nvalchemi cuda_graph on rank {}: {}; its calls run "
                   "uncaptured from step {}", comm->me, s.model->cuda_graph_problem(),
                   update->ntimestep);
  }
}

bool PairNVAlchemi::virial_from_edges() const
{ return state->graph_on_device; }

bool PairNVAlchemi::differentiates_energy() const
{ return state->share.differentiate; }

/* ----------------------------------------------------------------------
   extra outputs, consolidated on demand (collective); the checks of what
   was declared are the same on every rank, those of what the model
   returned are rank-local
------------------------------------------------------------------------- */

const double *PairNVAlchemi::peratom_output(const char *name, int width)
{ return consolidated_output(name, true, width); }

const double *PairNVAlchemi::global_output(const char *name, int size)
{ return consolidated_output(name, false, size); }

const double *PairNVAlchemi::consolidated_output(const char *name, bool peratom, int n)
{
  State &s = *state;
  auto declared = s.spec.outputs.find(name);
  const bool fits = declared != s.spec.outputs.end() &&
      (peratom ? declared->second.kind == OutputKind::PER_NODE
               : (declared->second.kind == OutputKind::PER_GRAPH ||
                  declared->second.kind == OutputKind::GLOBAL));
  if (!fits)
    error->all(FLERR, Error::NOLASTLINE,
               "Model output '{}' is not declared {} in the spec of pair_style nvalchemi: "
               "declare it in the model's spec or with 'output {} {} <reduce>'",
               name, peratom ? "per_node" : "per_graph or global", name,
               peratom ? "per_node" : "per_graph");
  if (s.evaluations == 0)
    error->all(FLERR, Error::NOLASTLINE, "Model output '{}' requested before the model ran", name);

  State::Consolidated &c = s.consolidated[name];
  if (c.evaluation == s.evaluations) return c.values.data();
  step_to_host(s.graph, s.outputs, true);
  stop_on_output_error(lmp, s.model_file, [&] {
    const NVAlchemi::RankResult result = s.result(domain, comm->nprocs);
    if (peratom)
      NVAlchemi::consolidated_per_atom(result, name, n, *s.atom_comm, c.values);
    else
      NVAlchemi::consolidated_global(result, name, n, *s.atom_comm, c.values);
  });
  c.evaluation = s.evaluations;
  return c.values.data();
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
  if (s.evaluations == 0)
    error->all(FLERR, Error::NOLASTLINE, "pair_style nvalchemi has not run its model yet");
  step_to_host(s.graph, s.outputs, true);
  stop_on_output_error(lmp, s.model_file, [&] {
    NVAlchemi::decomposed_contribution(s.result(domain, comm->nprocs), atom->nlocal,
                                       *s.atom_comm, c, s.row_forces);
  });
}

void PairNVAlchemi::reference_contribution(const std::vector<double> &x,
                                           const std::vector<int> &type, NVAlchemi::Contribution &c)
{
  State &s = *state;
  std::vector<int64_t> atomic_numbers(type.size());
  for (size_t i = 0; i < type.size(); ++i) atomic_numbers[i] = s.atomic_number_of_type[type[i]];
  try {
    c = NVAlchemi::reference_contribution(*s.model, s.spec, s.share, x, atomic_numbers,
                                          NVAlchemi::box_cell(domain), cutoff);
  } catch (std::exception &e) {
    error->one(FLERR, Error::NOLASTLINE,
               "pair_style nvalchemi: model {} failed on the single-process reference: {}",
               s.model_file, e.what());
  }
}

const std::vector<int> &PairNVAlchemi::atomic_number_of_type() const
{ return state->atomic_number_of_type; }

const NVAlchemi::Device &PairNVAlchemi::device() const
{ return state->device; }

/* ---------------------------------------------------------------------- */

double PairNVAlchemi::memory_usage()
{
  const State &s = *state;
  double bytes = Pair::memory_usage() + s.graph.memory_bytes() +
      (s.device_graph ? s.device_graph->memory_bytes() : 0.0) +
      static_cast<double>(s.atom_row.capacity()) * sizeof(int);
  if (s.outputs.edge_gradients.get())
    bytes += static_cast<double>(3 * s.graph.num_edges()) * sizeof(double);
  for (const auto &entry : s.outputs.tensors)
    bytes += static_cast<double>(entry.second.values.capacity()) * sizeof(double);
  for (const auto &entry : s.consolidated)
    bytes += static_cast<double>(entry.second.values.capacity()) * sizeof(double);
  if (s.halo) bytes += s.halo->memory_bytes();
  return bytes;
}
