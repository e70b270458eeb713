/* ----------------------------------------------------------------------
   LAMMPS - Large-scale Atomic/Molecular Massively Parallel Simulator
   https://www.lammps.org/, Sandia National Laboratories
   LAMMPS development team: developers@lammps.org

   This software is distributed under the GNU General Public License.
   See the README file in the top-level LAMMPS directory.
------------------------------------------------------------------------- */

/* ----------------------------------------------------------------------
   pair_style nvalchemi: TorchScript interatomic potentials under LAMMPS'
   domain decomposition (USER-NVALCHEMI package).
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
#include "nvalchemi_graph.h"
#include "nvalchemi_graph_partition.h"
#include "nvalchemi_lammps.h"
#include "nvalchemi_metadata.h"
#include "nvalchemi_model.h"
#include "nvalchemi_reference.h"
#include "nvalchemi_row_exchange.h"
#include "nvalchemi_spec.h"

#include <algorithm>
#include <cstring>
#include <map>
#include <memory>
#include <stdexcept>
#include <string>
#include <vector>

using namespace LAMMPS_NS;
using NVAlchemi::OutputKind;
using NVAlchemi::OutputSpec;
using NVAlchemi::Reduce;
using NVAlchemi::VIRIAL_VOIGT;

#ifdef NVALCHEMI_PLUGIN
static constexpr const char *BUILD_ROUTE = "plugin";
#else
static constexpr const char *BUILD_ROUTE = "built-in";
#endif

// per-atom values moved by one communication pass when the spec declares no wider feature
// (3: forces and other vectors)
static constexpr int MIN_COMM_COLUMNS = 3;

// LAMMPS' forward and reverse communication of per-atom arrays, for the exchange ops
struct PairNVAlchemi::AtomCommunication : public NVAlchemi::AtomComm {
  explicit AtomCommunication(PairNVAlchemi *pair) : pair(pair) {}
  int num_atoms() const override { return pair->atom->nlocal + pair->atom->nghost; }
  void forward(double *values, int width) override { pair->forward_copy(values, width); }
  void reverse(double *values, int width) override { pair->reverse_sum(values, width); }
  void sum_over_ranks(double *values, int n) override
  { MPI_Allreduce(MPI_IN_PLACE, values, n, MPI_DOUBLE, MPI_SUM, pair->world); }
  void range_over_ranks(const int64_t *values, int64_t *lowest, int64_t *highest,
                        int n) override
  { NVAlchemi::mpi_range(pair->world, values, lowest, highest, n); }
  PairNVAlchemi *pair;
};

struct PairNVAlchemi::State {
  std::string model_file;
  NVAlchemi::Device device;    // where this rank runs the model
  std::unique_ptr<NVAlchemi::ModelRunner> model;
  NVAlchemi::ModelMetadata metadata;
  NVAlchemi::MLIPSpec overrides;    // from pair_style keywords
  NVAlchemi::MLIPSpec spec;         // effective: model | keyword preset | keywords, resolved
  NVAlchemi::EnergyShare share;
  std::vector<int> atomic_number_of_type;    // [ntypes+1], 0 for NULL types
  NVAlchemi::Graph graph;
  std::vector<int> atom_row;
  int64_t row_capacity = 0, edge_capacity = 0;    // static shapes: padded sizes so far
  std::vector<double> row_forces;                 // [rows][3] scratch
  std::unique_ptr<AtomCommunication> atom_comm;
  // the exchange ops' implementation: per-atom communication (halo modes local, layerwise,
  // deep), or the whole system's rows (gp, which then also owns the graph the model sees)
  std::unique_ptr<NVAlchemi::MeasuredExchanger> exchange;
  NVAlchemi::GraphPartition *partition = nullptr;    // the exchange in halo mode gp
  std::vector<int64_t> row_tags;                     // gp: atom ID of each row, scratch
  bool narrow_comm_reported = false;
  bool model_virial_implied = false;    // this style set no_virial_fdotr_compute for the model
  std::string halo_origin;    // "the pair_style keywords set" or "the spec of model X sets"
  NVAlchemi::ModelOutputs outputs;
  bigint evaluations = 0;
  // consolidated extra outputs and the evaluation they belong to
  struct Consolidated {
    std::vector<double> values;
    bigint evaluation = -1;
  };
  std::map<std::string, Consolidated> consolidated;

  const OutputSpec &output_spec(const std::string &name) const { return spec.outputs.at(name); }
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
    Pair(lmp), state(new State), cutoff(0.0), threads(0), saved_cutghostuser(-1.0),
    comm_values(nullptr), comm_width(0), comm_offset(0)
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
  // a deep halo raised the ghost cutoff: give the next pair style the user's setting back
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

/* ----------------------------------------------------------------------
   pair_style nvalchemi <model.pt> [spec <preset>] [halo <mode>]
     [forces model|node_energy|global_energy] [static_shapes yes|no] [threads N]
     [device cpu|cuda|cuda:N] [library <file.so>] [output <name> <kind> <reduce>] ...
------------------------------------------------------------------------- */

void PairNVAlchemi::settings(int narg, char **arg)
{
  if (narg < 1) utils::missing_cmd_args(FLERR, "pair_style nvalchemi", error);

  NVAlchemi::MLIPSpec preset_keyword, overrides;
  std::unique_ptr<NVAlchemi::Device> requested_device;
  std::vector<std::string> libraries;
  threads = 0;
  int iarg = 1;
  try {
    while (iarg < narg) {
      const std::string keyword = arg[iarg];
      const auto need = [&](int n) {
        if (iarg + n >= narg)
          utils::missing_cmd_args(FLERR, "pair_style nvalchemi " + keyword, error);
      };
      if (keyword == "spec") {
        need(1);
        preset_keyword = NVAlchemi::preset(arg[iarg + 1]);
        iarg += 2;
      } else if (keyword == "halo") {
        need(1);
        overrides.halo = NVAlchemi::parse_halo_mode(arg[iarg + 1]);
        iarg += 2;
      } else if (keyword == "forces") {
        need(1);
        overrides.compile.force_strategy = NVAlchemi::parse_force_strategy(arg[iarg + 1]);
        iarg += 2;
      } else if (keyword == "static_shapes") {
        need(1);
        overrides.compile.static_shapes = utils::logical(FLERR, arg[iarg + 1], false, lmp) == 1;
        iarg += 2;
      } else if (keyword == "threads") {
        need(1);
        threads = utils::inumeric(FLERR, arg[iarg + 1], false, lmp);
        if (threads < 1)
          error->all(FLERR, iarg + 2,
                     "pair_style nvalchemi threads must be at least 1 (LibTorch threads per rank)");
        iarg += 2;
      } else if (keyword == "device") {
        need(1);
        requested_device =
            std::make_unique<NVAlchemi::Device>(NVAlchemi::parse_device(arg[iarg + 1]));
        iarg += 2;
      } else if (keyword == "library") {
        need(1);
        libraries.emplace_back(arg[iarg + 1]);
        iarg += 2;
      } else if (keyword == "output") {
        need(3);
        overrides.outputs[arg[iarg + 1]] = {NVAlchemi::parse_output_kind(arg[iarg + 2]),
                                            NVAlchemi::parse_reduce(arg[iarg + 3])};
        iarg += 4;
      } else {
        error->all(FLERR, iarg + 1, "Unknown pair_style nvalchemi keyword: {}", keyword);
      }
    }
  } catch (std::invalid_argument &e) {
    error->all(FLERR, iarg + 2, "pair_style nvalchemi {}: {}", arg[iarg], e.what());
  }
  state->overrides = preset_keyword | overrides;
  state->device = NVAlchemi::rank_device(lmp, requested_device.get());
  NVAlchemi::load_op_libraries(lmp, libraries);    // before the model: it may call their ops
  load_model(arg[0]);

  // a re-issued pair_style may bring a model with other species: require a new pair_coeff
  if (allocated)
    for (int i = 1; i <= atom->ntypes; ++i)
      for (int j = i; j <= atom->ntypes; ++j) setflag[i][j] = 0;
}

/* ----------------------------------------------------------------------
   rank 0 reads the model file, every rank deserializes the same bytes,
   so a bad file fails identically (and collectively) on all ranks
------------------------------------------------------------------------- */

void PairNVAlchemi::load_model(const char *file)
{
  std::string archive;
  if (!NVAlchemi::read_and_broadcast(lmp, file, archive))
    error->all(FLERR, 1,
               "Cannot open pair_style nvalchemi model file {}: check the path (relative paths "
               "are also searched in $LAMMPS_POTENTIALS)",
               file);

  State &s = *state;
  s.model_file = file;
  const char *format = NVAlchemi::is_aoti_package(archive) ? "an AOTInductor" : "a TorchScript";
  try {
    s.model = NVAlchemi::load_model(archive, s.device);
  } catch (std::exception &e) {
    error->all(FLERR, 1, "Cannot load {} as {} model: {}", file, format, e.what());
  }

  const std::string &text = s.model->metadata_text();
  if (text.empty())
    error->all(FLERR, 1,
               "Model {} has no USER-NVALCHEMI metadata ({} inside the archive): write the model "
               "with the package's Python helper nvalchemi_export.save_model (the model contract "
               "of the USER-NVALCHEMI documentation)",
               file, NVAlchemi::METADATA_FILE);
  try {
    s.metadata = NVAlchemi::parse_metadata(text);
  } catch (std::exception &e) {
    error->all(FLERR, 1, "Model {} has invalid metadata: {}", file, e.what());
  }
  const NVAlchemi::ModelMetadata &meta = s.metadata;

  if (meta.units != update->unit_style)
    error->all(FLERR, 1,
               "Model {} works in '{}' units but this run uses 'units {}': use 'units {}' before "
               "the box is defined, or export the model for '{}' units",
               file, meta.units, update->unit_style, meta.units, update->unit_style);

  try {
    s.spec = (meta.spec | s.overrides).resolved();
  } catch (std::invalid_argument &e) {
    error->all(FLERR, 1, "Model {} with the pair_style keywords given: {}", file, e.what());
  }
  const NVAlchemi::MLIPSpec &spec = s.spec;
  NVAlchemi::check_operators(lmp, file, s.model->custom_operators(), *spec.custom_ops);
  // errors about the effective spec name where its fields came from
  s.halo_origin = s.overrides.halo ? "the pair_style keywords set"
                                   : fmt::format("the spec of model {} sets", file);
  try {
    s.share = NVAlchemi::energy_share(spec, comm->nprocs);
    s.model->check_share(s.share);
  } catch (std::invalid_argument &e) {
    error->all(FLERR, 1, "Model {} with the pair_style keywords given: {}", file, e.what());
  }

  // A model that brings its forces and declares its own global virial: that is the global
  // virial (pair_modify nofdotr implied). F dot r would miss what the energy owes to positions
  // and cell directly, as reciprocal-space sums do.
  const bool model_virial = !s.share.differentiate && NVAlchemi::declares_model_virial(spec);
  if (model_virial) no_virial_fdotr_compute = 1;
  else if (s.model_virial_implied) no_virial_fdotr_compute = 0;
  s.model_virial_implied = model_virial;

  // one communication pass moves a row of the widest feature the model exchanges; set here, not
  // in init_style, because pair_style hybrid takes its sub-styles' widths when it is defined
  comm_forward = comm_reverse = std::max(MIN_COMM_COLUMNS, *spec.exchange_feature_width);
  cutoff = meta.cutoff;
  s.model->set_float64(meta.dtype == "float64");
  ghostneigh = *spec.halo == NVAlchemi::HaloMode::DEEP ? 1 : 0;
  // the exchange ops work in every halo mode; with ghost receivers (deep) the owned rows of an
  // edge sum are complete and scatter_to_owners only refreshes
  s.atom_comm = std::make_unique<AtomCommunication>(this);
  s.partition = nullptr;
  if (*spec.halo == NVAlchemi::HaloMode::GP) {
    auto partition = std::make_unique<NVAlchemi::GraphPartition>(world);
    s.partition = partition.get();
    s.exchange = std::move(partition);
  } else {
    s.exchange = std::make_unique<NVAlchemi::RowExchange>(s.graph, *s.atom_comm, ghostneigh == 1);
  }
  s.narrow_comm_reported = false;
  s.row_capacity = s.edge_capacity = 0;

  if (comm->me == 0) {
    std::string species;
    for (int z : meta.species) species += " " + NVAlchemi::element_symbol(z);
    utils::logmesg(lmp,
                   "pair_style nvalchemi ({}): model {} ({}), contract v{}, units {}, {}, cutoff "
                   "{}, species:{}\neffective spec:\n{}\n",
                   BUILD_ROUTE, file, s.model->format(), meta.contract_version, meta.units,
                   meta.dtype, meta.cutoff, species, spec.to_json(2));
  }
}

/* ----------------------------------------------------------------------
   pair_coeff * * <element or NULL for each atom type>
------------------------------------------------------------------------- */

void PairNVAlchemi::coeff(int narg, char **arg)
{
  if (!allocated) allocate();
  const int ntypes = atom->ntypes;
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
  if (force->newton_pair == 0)
    error->all(FLERR, Error::NOLASTLINE,
               "Pair style nvalchemi requires newton pair on: ghost-atom forces are sent to "
               "their owners by reverse communication");
  // the model defines its own cutoff behaviour: options that would change it are refused
  if (offset_flag)
    error->all(FLERR, Error::NOLASTLINE,
               "Pair style nvalchemi cannot shift its energy (pair_modify shift yes): the model "
               "defines its own cutoff behaviour; use pair_modify shift no");
  if (tail_flag)
    error->all(FLERR, Error::NOLASTLINE,
               "Pair style nvalchemi has no tail correction (pair_modify tail yes): the model "
               "defines its own cutoff behaviour; use pair_modify tail no");
  if (state->partition && atom->tag_enable == 0)
    error->all(FLERR, Error::NOLASTLINE,
               "Halo mode 'gp' of pair style nvalchemi maps ghost atoms to their atoms' rows by "
               "atom ID: use atom_modify id yes (the default) before the box is defined");
  request_neighbor_list();
  if (ghostneigh) {
    // deep halo: the ghosts within L cutoffs, which get edges of their own
    const int layers = std::max(1, *state->spec.num_message_passing_layers);
    const double ghost_cutoff = layers * cutoff + neighbor->skin;
    if (saved_cutghostuser < 0.0) saved_cutghostuser = comm->cutghostuser;
    comm->cutghostuser = std::max(saved_cutghostuser, ghost_cutoff);
    if (comm->me == 0)
      utils::logmesg(lmp,
                     "pair_style nvalchemi: halo mode deep raises the ghost cutoff to {:.8g} "
                     "({} layers x cutoff {} + skin {})\n",
                     comm->cutghostuser, layers, cutoff, neighbor->skin);
  } else {
    if (saved_cutghostuser >= 0.0) comm->cutghostuser = saved_cutghostuser;
    saved_cutghostuser = -1.0;
  }
  NVAlchemi::ModelRunner::set_num_threads(threads > 0 ? threads : comm->nthreads);
}

/* ----------------------------------------------------------------------
   deep halo: a full list of owned and ghost atoms (every ghost within L
   cutoffs gets its own edges, so that L layers of message passing on this
   rank see all they need for the owned atoms); else a half list without
   newton: each pair of owned atoms once (both edges come from it), each
   owned-ghost pair on both ranks, half the distances of a full list
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
   energy, forces and virial as the spec says (doc/Howto_nvalchemi_spec.rst)
------------------------------------------------------------------------- */

void PairNVAlchemi::compute(int eflag, int vflag)
{
  const double start = platform::walltime();
  ev_init(eflag, vflag);

  State &s = *state;
  build_rank_graph(s.graph);
  NVAlchemi::Graph &model_graph = s.partition ? partition_graph() : s.graph;
  if (*s.spec.compile.static_shapes) pad_to_capacity(model_graph);
  summary.graph = platform::walltime() - start;

  s.exchange->seconds = 0.0;
  s.exchange->refreshes = 0;
  s.exchange->start_evaluation();
  const double model_start = platform::walltime();
  try {
    s.model->evaluate(model_graph, NVAlchemi::box_cell(domain), s.share, s.exchange.get(),
                      s.outputs);
    s.exchange->agree(NVAlchemi::ExchangeCall::RETURNED, 0);
  } catch (std::exception &e) {
    if (!s.exchange->mismatched())
      error->one(FLERR, Error::NOLASTLINE, "pair_style nvalchemi: model {} failed on step {}: {}",
                 s.model_file, update->ntimestep, e.what());
  }
  if (s.exchange->mismatched()) stop_on_exchange_mismatch();
  // the consolidation reads rows of this rank's atoms
  if (s.partition) s.partition->to_halo_rows(s.spec, s.graph, s.outputs);
  const double model_seconds = platform::walltime() - model_start;
  ++s.evaluations;
  check_exchange_calls();
  NVAlchemi::provide_framework_outputs(s.spec, s.share, s.outputs);
  report_narrow_comm();

  const double tally_start = platform::walltime();
  stop_on_output_error(lmp, s.model_file, [&] {
    NVAlchemi::check_finite(s.spec, s.share, s.graph, s.outputs, [&](int64_t row) {
      return static_cast<int64_t>(atom->tag[s.graph.row_atom[row]]);
    });
    tally_energy();
    if (s.share.differentiate)
      tally_edge_forces();
    else
      tally_model_forces();
  });
  if (vflag_fdotr) virial_fdotr_compute();
  summary.tally = platform::walltime() - tally_start;

  summary.exchange = s.exchange->seconds;
  summary.model = model_seconds - summary.exchange - s.outputs.marshal_seconds;
  summary.glue = platform::walltime() - start - model_seconds + s.outputs.marshal_seconds;
  summary.tensors = s.outputs.marshal_seconds;
  summary.forward = s.outputs.forward_seconds;
  summary.backward = s.outputs.backward_seconds;
  summary.edges = s.graph.num_edges();
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
  NVAlchemi::build_graph(atoms, neighbors, cutoff, graph, s.atom_row);
}

/* ----------------------------------------------------------------------
   halo mode gp: the graph of the whole system's rows that the model sees,
   built from this rank's graph (collective)
------------------------------------------------------------------------- */

NVAlchemi::Graph &PairNVAlchemi::partition_graph()
{
  State &s = *state;
  s.row_tags.resize(s.graph.num_rows());
  for (int64_t r = 0; r < s.graph.num_rows(); ++r) s.row_tags[r] = atom->tag[s.graph.row_atom[r]];
  try {
    s.partition->build(s.graph, s.row_tags);
  } catch (std::exception &e) {
    error->one(FLERR, Error::NOLASTLINE, "pair_style nvalchemi: model {} on step {}: {}",
               s.model_file, update->ntimestep, e.what());
  }
  return s.partition->graph();
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
  NVAlchemi::pad_graph(graph, rows, edges, cutoff);
}

/* ----------------------------------------------------------------------
   the ranks' exchange calls differed (every rank knows it at the same
   call): stop every rank with where each one stood (collective)
------------------------------------------------------------------------- */

void PairNVAlchemi::stop_on_exchange_mismatch()
{
  const NVAlchemi::CallPoint &here = state->exchange->point();
  const int64_t mine[3] = {here.calls, static_cast<int64_t>(here.call), here.size};
  std::vector<int64_t> all(3 * static_cast<size_t>(comm->nprocs));
  MPI_Allgather(mine, 3, MPI_INT64_T, all.data(), 3, MPI_INT64_T, world);
  // ranks grouped by where they stood, groups in the order of their first rank
  std::map<std::vector<int64_t>, size_t> group_of;
  std::vector<std::pair<NVAlchemi::CallPoint, std::vector<int>>> groups;
  for (int p = 0; p < comm->nprocs; ++p) {
    const std::vector<int64_t> key(&all[3 * p], &all[3 * p + 3]);
    if (!group_of.count(key)) {
      group_of[key] = groups.size();
      groups.push_back({{key[0], static_cast<NVAlchemi::ExchangeCall>(key[1]), key[2]}, {}});
    }
    groups[group_of[key]].second.push_back(p);
  }
  std::string where;
  for (const auto &[point, ranks] : groups) {
    std::string list = std::to_string(ranks.front());
    for (size_t k = 1; k < std::min<size_t>(ranks.size(), 8); ++k)
      list += " " + std::to_string(ranks[k]);
    if (ranks.size() > 8) list += fmt::format(" and {} more", ranks.size() - 8);
    where += fmt::format("; rank{} {}: {}", ranks.size() > 1 ? "s" : "", list, point.str());
  }
  error->all(FLERR, Error::NOLASTLINE,
             "Model {} made different exchange calls on different ranks on step {}{}. Every rank "
             "must make the same torch.ops.nvalchemi calls in the same order, a rank without "
             "atoms too (with empty rows): the model's control flow around these calls depends "
             "on the rank's data. Check the model with nvalchemi-check",
             state->model_file, update->ntimestep, where);
}

/* ----------------------------------------------------------------------
   a multi-layer model whose ghost rows are not refreshed between layers
   (one built for the deep halo, run in halo mode local or layerwise) would
   give plausible wrong numbers: stop instead. Every rank makes the same
   (collective) exchange calls, so every rank decides the same.
------------------------------------------------------------------------- */

void PairNVAlchemi::check_exchange_calls()
{
  State &s = *state;
  const int layers = *s.spec.num_message_passing_layers;
  if (*s.spec.halo == NVAlchemi::HaloMode::DEEP || layers < 2 || s.exchange->refreshes > 0) return;
  error->all(FLERR, Error::NOLASTLINE,
             "Model {} declares {} message-passing layers but made no exchange call in halo mode "
             "'{}', which {}: its ghost atoms would miss messages from beyond the cutoff. A model "
             "that never calls torch.ops.nvalchemi.refresh_neighbors or scatter_to_owners "
             "needs halo mode 'deep'; a layerwise model should make {} such calls per evaluation",
             s.model_file, layers, NVAlchemi::to_string(*s.spec.halo), s.halo_origin, layers - 1);
}

/* ----------------------------------------------------------------------
   a model that exchanges wider rows than its spec declares takes several
   communication passes per op call: say so once (rank 0; every rank makes
   the same op calls)
------------------------------------------------------------------------- */

void PairNVAlchemi::report_narrow_comm()
{
  State &s = *state;
  // halo mode gp moves whole rows in one collective, whatever their width
  if (s.partition || s.narrow_comm_reported || s.exchange->widest <= comm_forward) return;
  s.narrow_comm_reported = true;
  if (comm->me == 0)
    error->warning(FLERR,
                   "Model {} exchanges {} values per atom but its spec declares "
                   "exchange_feature_width {}: each exchange takes {} communication passes; set "
                   "exchange_feature_width to {} in the model's spec to move a row in one",
                   s.model_file, s.exchange->widest, *s.spec.exchange_feature_width,
                   (s.exchange->widest + comm_forward - 1) / comm_forward, s.exchange->widest);
}

/* ----------------------------------------------------------------------
   global energy: this rank's share (LAMMPS sums the ranks); per-atom
   energy: the node energies (ghost rows too when they are partials, which
   compute pe/atom then sums into the owners)
------------------------------------------------------------------------- */

void PairNVAlchemi::tally_energy()
{
  if (!eflag_either) return;
  State &s = *state;
  if (eflag_global) eng_vdwl += s.outputs.energy_share;
  if (!eflag_atom) return;

  const std::string &key = *s.spec.node_energy_key;
  if (!s.spec.outputs.count(key) || s.output_spec(key).kind != OutputKind::PER_NODE)
    error->all(FLERR, Error::NOLASTLINE,
               "Per-atom energy needs the spec of pair_style nvalchemi to declare the node "
               "energies '{}' as per_node",
               key);
  const auto &energies =
      NVAlchemi::row_output(s.outputs, key, s.graph, 1, "Per-atom energy").values;
  const int64_t rows = NVAlchemi::consolidated_rows(s.output_spec(key), s.graph);
  for (int64_t r = 0; r < rows; ++r) eatom[s.graph.row_atom[r]] += energies[r];
}

/* ----------------------------------------------------------------------
   framework forces: an edge r_ij = x_i - x_j with gradient g pulls -g on
   the receiver i and +g on the sender j (ghost forces go home by reverse
   comm) and contributes -r_ij (x) g to the virial
------------------------------------------------------------------------- */

void PairNVAlchemi::tally_edge_forces()
{
  State &s = *state;
  const double *grad = s.outputs.edge_gradients.get();
  add_edge_forces(s.graph, grad);
  if (!vflag_either || !grad) return;

  const int nlocal = atom->nlocal;
  const std::vector<int> &row_atom = s.graph.row_atom;
  const int64_t *edges = s.graph.edges.data();
  const double *rij = s.graph.edge_vectors.data();
  for (int64_t e = 0; e < s.graph.num_edges(); ++e) {
    const double *g = grad + 3 * e;
    const double *r = rij + 3 * e;
    ev_tally_xyz(row_atom[edges[2 * e + 1]], row_atom[edges[2 * e]], nlocal, 1, 0.0, 0.0, -g[0],
                 -g[1], -g[2], r[0], r[1], r[2]);
  }
}

void PairNVAlchemi::add_edge_forces(const NVAlchemi::Graph &graph, const double *edge_gradients)
{
  NVAlchemi::add_edge_forces(graph, edge_gradients, atom->f);
}

/* ----------------------------------------------------------------------
   model-internal forces, virial [3,3] and per-atom virials [N,3,3], rows
   consolidated by their spec (W_ab = sum r_a f_b, LAMMPS order xx yy zz
   xy xz yz)
------------------------------------------------------------------------- */

void PairNVAlchemi::tally_model_forces()
{
  State &s = *state;
  const std::vector<int> &row_atom = s.graph.row_atom;
  const std::string purpose = "Force strategy 'model'";

  double **f = atom->f;
  const OutputSpec &declared = s.output_spec("forces");
  const double weight = NVAlchemi::row_weight(declared, comm->nprocs);
  const auto &forces = NVAlchemi::row_output(s.outputs, "forces", s.graph, 3, purpose).values;
  for (int64_t r = 0, n = NVAlchemi::consolidated_rows(declared, s.graph); r < n; ++r)
    for (int d = 0; d < 3; ++d) f[row_atom[r]][d] += weight * forces[3 * r + d];

  if (vflag_global &&
      !NVAlchemi::add_model_virial(s.spec, s.graph, s.outputs,
                                   domain->xprd * domain->yprd * domain->zprd, comm->nprocs,
                                   "The global virial", virial))
    error->all(FLERR, Error::NOLASTLINE,
               "The global virial without F dot r (pair_modify nofdotr) with force strategy "
               "'model' needs the spec to declare model output 'virial' [1,3,3] or the "
               "toolkit's 'stress' [1,3,3] per_graph, or per-atom virials '{}' [N,3,3] per_node",
               *s.spec.node_virial_key);
  if (vflag_atom) {
    const std::string &key = *s.spec.node_virial_key;
    if (!s.spec.outputs.count(key) || s.output_spec(key).kind != OutputKind::PER_NODE)
      error->all(FLERR, Error::NOLASTLINE,
                 "Per-atom virials with force strategy 'model' need the spec to declare output "
                 "'{}' per_node",
                 key);
    const auto &w = NVAlchemi::row_output(s.outputs, key, s.graph, 9, "Per-atom virials").values;
    const double row_weight = NVAlchemi::row_weight(s.output_spec(key), comm->nprocs);
    for (int64_t r = 0, n = NVAlchemi::consolidated_rows(s.output_spec(key), s.graph); r < n; ++r)
      for (int v = 0; v < 6; ++v)
        vatom[row_atom[r]][v] +=
            row_weight * w[9 * r + 3 * VIRIAL_VOIGT[v][0] + VIRIAL_VOIGT[v][1]];
  }
}

/* ----------------------------------------------------------------------
   extra outputs, consolidated on demand (collective); the checks of what
   was declared are the same on every rank, those of what the model
   returned are rank-local
------------------------------------------------------------------------- */

const OutputSpec &PairNVAlchemi::requested_output(const char *name, bool peratom)
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
  return declared->second;
}

const double *PairNVAlchemi::peratom_output(const char *name, int width)
{
  State &s = *state;
  const OutputSpec &declared = requested_output(name, true);
  State::Consolidated &c = s.consolidated[name];
  if (c.evaluation == s.evaluations) return c.values.data();

  const NVAlchemi::OutputTensor *t = nullptr;
  stop_on_output_error(lmp, s.model_file, [&] {
    t = &NVAlchemi::row_output(s.outputs, name, s.graph, width, "compute nvalchemi/atom");
  });
  NVAlchemi::rows_to_atoms(s.graph, t->values.data(),
                           NVAlchemi::consolidated_rows(declared, s.graph), width,
                           atom->nlocal + atom->nghost, c.values);
  if (NVAlchemi::sums_ghost_rows(declared)) reverse_sum(c.values.data(), width);
  const double weight = NVAlchemi::row_weight(declared, comm->nprocs);
  if (weight != 1.0)
    for (double &value : c.values) value *= weight;
  c.evaluation = s.evaluations;
  return c.values.data();
}

const double *PairNVAlchemi::global_output(const char *name, int size)
{
  State &s = *state;
  const OutputSpec &declared = requested_output(name, false);
  State::Consolidated &c = s.consolidated[name];
  if (c.evaluation == s.evaluations) return c.values.data();

  stop_on_output_error(lmp, s.model_file, [&] {
    c.values = NVAlchemi::sized_output(s.outputs, name, size, "compute nvalchemi/global").values;
  });
  if (declared.kind == OutputKind::PER_GRAPH) {
    if (NVAlchemi::sums_over_ranks(declared)) {
      const double weight = NVAlchemi::rank_share_weight(declared, comm->nprocs);
      for (double &value : c.values) value *= weight;
      MPI_Allreduce(MPI_IN_PLACE, c.values.data(), size, MPI_DOUBLE, MPI_SUM, world);
    } else {    // already global and replicated: every rank reports rank 0's copy, counted once
      MPI_Bcast(c.values.data(), size, MPI_DOUBLE, 0, world);
    }
  }    // GLOBAL passes through: each rank keeps its own value
  c.evaluation = s.evaluations;
  return c.values.data();
}

/* ----------------------------------------------------------------------
   ghost atoms of a per-atom array take their owners' values, in passes of
   at most comm_forward columns
------------------------------------------------------------------------- */

void PairNVAlchemi::forward_copy(double *values, int width)
{
  comm_values = values;
  comm_width = width;
  for (comm_offset = 0; comm_offset < width; comm_offset += comm_forward)
    comm->forward_comm(this, std::min(comm_forward, width - comm_offset));
  comm_values = nullptr;
}

int PairNVAlchemi::pack_forward_comm(int n, int *list, double *buf, int /*pbc_flag*/, int * /*pbc*/)
{
  const int columns = std::min(comm_forward, comm_width - comm_offset);
  int m = 0;
  for (int i = 0; i < n; ++i)
    for (int c = 0; c < columns; ++c)
      buf[m++] = comm_values[static_cast<size_t>(list[i]) * comm_width + comm_offset + c];
  return m;
}

void PairNVAlchemi::unpack_forward_comm(int n, int first, double *buf)
{
  const int columns = std::min(comm_forward, comm_width - comm_offset);
  int m = 0;
  for (int i = first; i < first + n; ++i)
    for (int c = 0; c < columns; ++c)
      comm_values[static_cast<size_t>(i) * comm_width + comm_offset + c] = buf[m++];
}

/* ----------------------------------------------------------------------
   ghost-atom partials of a per-atom array summed into their owners, in
   passes of at most comm_reverse columns
------------------------------------------------------------------------- */

void PairNVAlchemi::reverse_sum(double *values, int width)
{
  comm_values = values;
  comm_width = width;
  for (comm_offset = 0; comm_offset < width; comm_offset += comm_reverse)
    comm->reverse_comm(this, std::min(comm_reverse, width - comm_offset));
  comm_values = nullptr;
}

int PairNVAlchemi::pack_reverse_comm(int n, int first, double *buf)
{
  const int columns = std::min(comm_reverse, comm_width - comm_offset);
  int m = 0;
  for (int i = first; i < first + n; ++i)
    for (int c = 0; c < columns; ++c)
      buf[m++] = comm_values[static_cast<size_t>(i) * comm_width + comm_offset + c];
  return m;
}

void PairNVAlchemi::unpack_reverse_comm(int n, int *list, double *buf)
{
  const int columns = std::min(comm_reverse, comm_width - comm_offset);
  int m = 0;
  for (int i = 0; i < n; ++i)
    for (int c = 0; c < columns; ++c)
      comm_values[static_cast<size_t>(list[i]) * comm_width + comm_offset + c] += buf[m++];
}

/* ----------------------------------------------------------------------
   the last evaluation's share of energy, forces and virial, summed over
   ranks; ghost-row forces go home by reverse communication
------------------------------------------------------------------------- */

void PairNVAlchemi::decomposed_contribution(NVAlchemi::Contribution &c)
{
  State &s = *state;
  if (s.evaluations == 0)
    error->all(FLERR, Error::NOLASTLINE, "pair_style nvalchemi has not run its model yet");
  c = NVAlchemi::Contribution();
  stop_on_output_error(lmp, s.model_file, [&] {
    NVAlchemi::rank_share(s.spec, s.share, s.graph, s.outputs,
                          domain->xprd * domain->yprd * domain->zprd, comm->nprocs, c,
                          s.row_forces);
  });
  const int nlocal = atom->nlocal;
  std::vector<double> atom_forces;
  NVAlchemi::rows_to_atoms(s.graph, s.row_forces.data(), s.graph.num_rows(), 3,
                           nlocal + atom->nghost, atom_forces);
  reverse_sum(atom_forces.data(), 3);
  c.forces.assign(atom_forces.begin(), atom_forces.begin() + 3 * nlocal);

  double sums[7] = {c.energy,    c.virial[0], c.virial[1], c.virial[2],
                    c.virial[3], c.virial[4], c.virial[5]};
  MPI_Allreduce(MPI_IN_PLACE, sums, 7, MPI_DOUBLE, MPI_SUM, world);
  c.energy = sums[0];
  std::copy_n(sums + 1, 6, c.virial);
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
  const NVAlchemi::Graph &g = s.graph;
  double bytes = Pair::memory_usage();
  bytes += static_cast<double>(g.row_atom.capacity() + s.atom_row.capacity()) * sizeof(int);
  bytes += static_cast<double>(g.positions.capacity() + g.edge_vectors.capacity()) * sizeof(double);
  bytes += static_cast<double>(g.atomic_numbers.capacity() + g.edges.capacity()) * sizeof(int64_t);
  if (s.outputs.edge_gradients.get())
    bytes += static_cast<double>(3 * g.num_edges()) * sizeof(double);
  for (const auto &entry : s.outputs.tensors)
    bytes += static_cast<double>(entry.second.values.capacity()) * sizeof(double);
  for (const auto &entry : s.consolidated)
    bytes += static_cast<double>(entry.second.values.capacity()) * sizeof(double);
  if (s.partition) bytes += s.partition->memory_bytes();
  return bytes;
}
