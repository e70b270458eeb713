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

#include "nvalchemi_graph.h"
#include "nvalchemi_lammps.h"
#include "nvalchemi_metadata.h"
#include "nvalchemi_model.h"
#include "nvalchemi_spec.h"

#include <algorithm>
#include <cmath>
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

#ifdef NVALCHEMI_PLUGIN
static constexpr const char *BUILD_ROUTE = "plugin";
#else
static constexpr const char *BUILD_ROUTE = "built-in";
#endif

namespace {
// columns sent per forward/reverse communication pass; wider data goes in several passes
constexpr int COMM_COLUMNS = 8;

// a per-atom output is a sum of contributions whose ghost-row partials belong to the owners
bool sums_ghost_rows(const OutputSpec &spec)
{ return spec.reduce == Reduce::ALL_REDUCE; }

// weight of a per-graph value in this rank's share of a sum over ranks: a partial counts as it
// is; a value replicated on every rank counts 1/nprocs, so that the ranks together count it once
double rank_share_weight(const OutputSpec &spec, int nprocs)
{ return spec.reduce == Reduce::ALL_REDUCE ? 1.0 : 1.0 / nprocs; }

std::string shape_string(const NVAlchemi::OutputTensor *t)
{
  if (!t) return "nothing";
  std::string text;
  for (int64_t n : t->shape) text += (text.empty() ? "" : ",") + std::to_string(n);
  return "shape [" + text + "]";
}

int64_t row_width(const NVAlchemi::OutputTensor &t)
{
  int64_t width = 1;
  for (size_t d = 1; d < t.shape.size(); ++d) width *= t.shape[d];
  return width;
}

using NVAlchemi::VIRIAL_VOIGT;

// accumulates the wall time since construction into `total`
struct Stopwatch {
  explicit Stopwatch(double &total) : total(total), start(platform::walltime()) {}
  ~Stopwatch() { total += platform::walltime() - start; }
  double &total;
  double start;
};
}    // namespace

// the exchange ops' rows, served by the pair style's communication
class RowExchange : public NVAlchemi::Exchanger {
 public:
  RowExchange(PairNVAlchemi *pair, const NVAlchemi::Graph &graph, MPI_Comm world) :
      pair(pair), graph(graph), world(world)
  {
  }
  int64_t num_rows() const override { return graph.num_rows(); }
  int64_t num_owned() const override { return graph.n_owned; }
  void refresh(double *rows, int width) override
  {
    Stopwatch watch(seconds);
    pair->refresh_rows(rows, width);
  }
  void sum_into_owners(double *rows, int width) override
  {
    Stopwatch watch(seconds);
    pair->sum_rows_into_owners(rows, width);
  }
  void sum_over_ranks(double *values, int n) override
  {
    Stopwatch watch(seconds);
    MPI_Allreduce(MPI_IN_PLACE, values, n, MPI_DOUBLE, MPI_SUM, world);
  }
  double seconds = 0.0;    // spent in the ops

 private:
  PairNVAlchemi *pair;
  const NVAlchemi::Graph &graph;
  MPI_Comm world;
};

struct PairNVAlchemi::State {
  std::string model_file;
  std::unique_ptr<NVAlchemi::TorchModel> model;
  NVAlchemi::ModelMetadata metadata;
  NVAlchemi::MLIPSpec overrides;    // from pair_style keywords
  NVAlchemi::MLIPSpec spec;         // effective: model | keyword preset | keywords, resolved
  NVAlchemi::EnergyShare share;
  std::vector<int> atomic_number_of_type;    // [ntypes+1], 0 for NULL types
  NVAlchemi::Graph graph;
  std::vector<int> atom_row;
  std::vector<double> atom_values;          // per-atom scratch of the exchange ops
  std::vector<double> row_forces;           // [rows][3] scratch
  std::unique_ptr<RowExchange> exchange;    // set in halo mode layerwise only
  NVAlchemi::ModelOutputs outputs;
  bigint evaluations = 0;
  // consolidated extra outputs and the evaluation they belong to
  struct Consolidated {
    std::vector<double> values;
    bigint evaluation = -1;
  };
  std::map<std::string, Consolidated> consolidated;

  const OutputSpec &output_spec(const std::string &name) const { return spec.outputs.at(name); }
  static const NVAlchemi::OutputTensor *tensor(const NVAlchemi::ModelOutputs &outputs,
                                               const std::string &name)
  {
    auto it = outputs.tensors.find(name);
    return it == outputs.tensors.end() ? nullptr : &it->second;
  }
  const NVAlchemi::OutputTensor *tensor(const std::string &name) const
  { return tensor(outputs, name); }

  // rows of a model output that carry its consolidated value: all rows for partials that the
  // owners sum, else the owned rows
  size_t consolidated_rows(const std::string &key, const NVAlchemi::Graph &g) const
  { return sums_ghost_rows(output_spec(key)) ? g.row_atom.size() : static_cast<size_t>(g.n_owned); }

  // This rank's share of one evaluation, by the rules the tallies follow: forces on the
  // graph's rows (ghost rows hold partials for their owners) and the virial from the edges, or
  // the model's own forces and virial. Throws std::runtime_error on a missing output.
  void rank_share(const NVAlchemi::Graph &g, const NVAlchemi::ModelOutputs &out, int nprocs,
                  PairNVAlchemi::Contribution &c, std::vector<double> &forces) const
  {
    c.energy = out.energy_share;
    if (share.differentiate) {
      for (double component : out.edge_gradients)
        c.force_scale = std::max(c.force_scale, std::fabs(component));
      NVAlchemi::edge_forces(g, out.edge_gradients, forces);
      c.has_virial = true;
      for (int64_t e = 0; e < g.num_edges(); ++e)
        for (int v = 0; v < 6; ++v)
          c.virial[v] -= g.edge_vectors[3 * e + VIRIAL_VOIGT[v][0]] *
              out.edge_gradients[3 * e + VIRIAL_VOIGT[v][1]];
      return;
    }
    const NVAlchemi::OutputTensor *f = tensor(out, "forces");
    if (!f || f->values.size() != 3 * g.row_atom.size())
      throw std::runtime_error(
          "force strategy 'model' needs output 'forces' with 3 values per atom");
    forces.assign(f->values.size(), 0.0);
    std::copy_n(f->values.begin(), 3 * consolidated_rows("forces", g), forces.begin());
    for (double component : forces) c.force_scale = std::max(c.force_scale, std::fabs(component));
    const NVAlchemi::OutputTensor *w = tensor(out, "virial");
    c.has_virial = w && w->values.size() == 9 && spec.outputs.count("virial");
    if (c.has_virial) {
      const double weight = rank_share_weight(output_spec("virial"), nprocs);
      for (int v = 0; v < 6; ++v)
        c.virial[v] += weight * w->values[3 * VIRIAL_VOIGT[v][0] + VIRIAL_VOIGT[v][1]];
    }
  }
};

/* ---------------------------------------------------------------------- */

PairNVAlchemi::PairNVAlchemi(LAMMPS *lmp) :
    Pair(lmp), state(new State), cutoff(0.0), saved_cutghostuser(-1.0), comm_values(nullptr),
    comm_width(0), comm_offset(0)
{
  single_enable = 0;
  restartinfo = 0;
  one_coeff = 1;
  manybody_flag = 1;
  comm_forward = COMM_COLUMNS;
  comm_reverse = COMM_COLUMNS;
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
     [forces model|node_energy|global_energy] [output <name> <kind> <reduce>] ...
------------------------------------------------------------------------- */

void PairNVAlchemi::settings(int narg, char **arg)
{
  if (narg < 1) utils::missing_cmd_args(FLERR, "pair_style nvalchemi", error);

  NVAlchemi::MLIPSpec preset_keyword, overrides;
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
  try {
    s.model = std::make_unique<NVAlchemi::TorchModel>(archive);
  } catch (std::exception &e) {
    error->all(FLERR, 1, "Cannot load {} as a TorchScript model: {}", file, e.what());
  }

  const std::string &text = s.model->metadata_text();
  if (text.empty())
    error->all(FLERR, 1,
               "Model {} has no USER-NVALCHEMI metadata ({} inside the archive); export it with "
               "potentials/nvalchemi_export.py (save_model), see doc/Howto_nvalchemi_contract.rst",
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

  s.spec = (meta.spec | s.overrides).resolved();
  const NVAlchemi::MLIPSpec &spec = s.spec;
  if (*spec.halo == NVAlchemi::HaloMode::GP)
    error->all(FLERR, 1,
               "Model {} runs in halo mode 'gp' (graph partition), which this version of "
               "pair_style nvalchemi does not support; use halo mode 'layerwise' or 'deep'",
               file);
  if (*spec.halo == NVAlchemi::HaloMode::LOCAL && *spec.num_message_passing_layers > 1)
    error->all(FLERR, 1,
               "Model {} has {} message-passing layers but runs in halo mode 'local': its ghost "
               "atoms would be missing messages from beyond the cutoff. A multi-layer model needs "
               "halo mode 'layerwise' or 'deep'",
               file, *spec.num_message_passing_layers);

  // which energy the framework sums (and differentiates, unless the model brings its forces)
  const auto declared = [&](const std::string &name, OutputKind kind) {
    auto it = spec.outputs.find(name);
    return it != spec.outputs.end() && it->second.kind == kind;
  };
  const auto strategy = *spec.compile.force_strategy;
  const std::string &node_energy = *spec.node_energy_key;
  NVAlchemi::EnergyShare &share = s.share;
  share.differentiate = strategy != NVAlchemi::ForceStrategy::MODEL_INTERNAL;
  if (strategy != NVAlchemi::ForceStrategy::FRAMEWORK_FROM_GLOBAL_ENERGY &&
      declared(node_energy, OutputKind::PER_NODE)) {
    share.key = node_energy;
    share.owned_rows = !sums_ghost_rows(s.output_spec(node_energy));
    share.weight = 1.0;
  } else if (strategy != NVAlchemi::ForceStrategy::FRAMEWORK_FROM_NODE_ENERGY &&
             declared("energy", OutputKind::PER_GRAPH)) {
    share.key = "energy";
    share.owned_rows = false;
    share.weight = rank_share_weight(s.output_spec("energy"), comm->nprocs);
  } else {
    error->all(FLERR, 1,
               "Model {}: force strategy '{}' needs the spec to declare the energy it uses: "
               "'{}' as per_node (node energies) or 'energy' as per_graph; add it with "
               "'output <name> <kind> <reduce>'",
               file, NVAlchemi::to_string(strategy), node_energy);
  }
  if (!share.differentiate && !declared("forces", OutputKind::PER_NODE))
    error->all(FLERR, 1,
               "Model {}: force strategy 'model' needs the spec to declare output 'forces' as "
               "per_node (e.g. 'output forces per_node all_reduce')",
               file);

  cutoff = meta.cutoff;
  s.model->set_float64(meta.dtype == "float64");
  ghostneigh = *spec.halo == NVAlchemi::HaloMode::DEEP ? 1 : 0;
  s.exchange.reset(*spec.halo == NVAlchemi::HaloMode::LAYERWISE
                       ? new RowExchange(this, s.graph, world)
                       : nullptr);

  if (comm->me == 0) {
    std::string species;
    for (int z : meta.species) species += " " + NVAlchemi::element_symbol(z);
    utils::logmesg(lmp,
                   "pair_style nvalchemi ({}): model {}, contract v{}, units {}, {}, cutoff {}, "
                   "species:{}\n  effective spec: {}\n",
                   BUILD_ROUTE, file, meta.contract_version, meta.units, meta.dtype, meta.cutoff,
                   species, spec.to_json());
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
  if (ghostneigh) {
    // deep halo: every ghost within L cutoffs gets its own edges, so that L layers of message
    // passing on this rank see all they need for the owned atoms
    neighbor->add_request(this, NeighConst::REQ_FULL | NeighConst::REQ_GHOST);
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
    neighbor->add_request(this, NeighConst::REQ_FULL);
    if (saved_cutghostuser >= 0.0) comm->cutghostuser = saved_cutghostuser;
    saved_cutghostuser = -1.0;
  }
  NVAlchemi::TorchModel::set_num_threads(comm->nthreads);
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
  const int nlocal = atom->nlocal;
  const NVAlchemi::AtomsView atoms{atom->x, atom->type, s.atomic_number_of_type.data(), nlocal,
                                   nlocal + atom->nghost};
  const NVAlchemi::NeighborView neighbors{list->inum,       ghostneigh ? list->gnum : 0,
                                          list->ilist,      list->numneigh,
                                          list->firstneigh, NEIGHMASK};
  NVAlchemi::build_graph(atoms, neighbors, cutoff, s.graph, s.atom_row);

  if (s.exchange) s.exchange->seconds = 0.0;
  const double model_start = platform::walltime();
  try {
    s.model->evaluate(s.graph, NVAlchemi::box_cell(domain), s.share, s.exchange.get(), s.outputs);
  } catch (std::exception &e) {
    error->one(FLERR, Error::NOLASTLINE, "pair_style nvalchemi: model {} failed on step {}: {}",
               s.model_file, update->ntimestep, e.what());
  }
  const double model_seconds = platform::walltime() - model_start;
  ++s.evaluations;

  tally_energy();
  if (s.share.differentiate)
    tally_edge_forces();
  else
    tally_model_forces();
  if (vflag_fdotr) virial_fdotr_compute();

  summary.exchange = s.exchange ? s.exchange->seconds : 0.0;
  summary.model = model_seconds - summary.exchange - s.outputs.marshal_seconds;
  summary.glue = platform::walltime() - start - model_seconds + s.outputs.marshal_seconds;
  summary.edges = s.graph.num_edges();
  summary.energy_share = s.outputs.energy_share;
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
  const NVAlchemi::OutputTensor *energies = s.tensor(key);
  if (!energies || !s.spec.outputs.count(key) || energies->values.size() != s.graph.row_atom.size())
    error->all(FLERR, Error::NOLASTLINE,
               "Per-atom energy needs model output '{}' (one value per atom, declared per_node)",
               key);
  const size_t rows = sums_ghost_rows(s.output_spec(key)) ? s.graph.row_atom.size()
                                                          : s.graph.n_owned;
  for (size_t r = 0; r < rows; ++r) eatom[s.graph.row_atom[r]] += energies->values[r];
}

/* ----------------------------------------------------------------------
   framework forces: an edge r_ij = x_i - x_j with gradient g pulls -g on
   the receiver i and +g on the sender j (ghost forces go home by reverse
   comm) and contributes -r_ij (x) g to the virial
------------------------------------------------------------------------- */

void PairNVAlchemi::tally_edge_forces()
{
  State &s = *state;
  double **f = atom->f;
  const std::vector<int> &row_atom = s.graph.row_atom;
  NVAlchemi::edge_forces(s.graph, s.outputs.edge_gradients, s.row_forces);
  for (size_t r = 0; r < row_atom.size(); ++r)
    for (int d = 0; d < 3; ++d) f[row_atom[r]][d] += s.row_forces[3 * r + d];
  if (!vflag_either) return;

  const int nlocal = atom->nlocal;
  const int64_t *edges = s.graph.edges.data();
  const double *rij = s.graph.edge_vectors.data();
  const double *grad = s.outputs.edge_gradients.data();
  for (int64_t e = 0; e < s.graph.num_edges(); ++e) {
    const double *g = grad + 3 * e;
    const double *r = rij + 3 * e;
    ev_tally_xyz(row_atom[edges[2 * e + 1]], row_atom[edges[2 * e]], nlocal, 1, 0.0, 0.0, -g[0],
                 -g[1], -g[2], r[0], r[1], r[2]);
  }
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
  const size_t nrows = row_atom.size();
  const auto rows_of = [&](const std::string &key, int64_t width) -> const double * {
    const NVAlchemi::OutputTensor *t = s.tensor(key);
    if (!t || t->shape.empty() || static_cast<size_t>(t->shape[0]) != nrows ||
        row_width(*t) != width)
      error->all(FLERR, Error::NOLASTLINE,
                 "Force strategy 'model' needs model output '{}' with {} values per atom", key,
                 width);
    return t->values.data();
  };
  const auto consolidated_rows = [&](const std::string &key) {
    return s.consolidated_rows(key, s.graph);
  };

  double **f = atom->f;
  const double *forces = rows_of("forces", 3);
  for (size_t r = 0, n = consolidated_rows("forces"); r < n; ++r)
    for (int d = 0; d < 3; ++d) f[row_atom[r]][d] += forces[3 * r + d];

  if (vflag_global) {
    const NVAlchemi::OutputTensor *w = s.tensor("virial");
    if (!w || w->values.size() != 9 || !s.spec.outputs.count("virial"))
      error->all(FLERR, Error::NOLASTLINE,
                 "The global virial without F dot r (pair_modify nofdotr) needs model output "
                 "'virial' [1,3,3], declared per_graph");
    const double weight = rank_share_weight(s.output_spec("virial"), comm->nprocs);
    for (int v = 0; v < 6; ++v)
      virial[v] += weight * w->values[3 * VIRIAL_VOIGT[v][0] + VIRIAL_VOIGT[v][1]];
  }
  if (vflag_atom) {
    const std::string &key = *s.spec.node_virial_key;
    if (!s.spec.outputs.count(key))
      error->all(FLERR, Error::NOLASTLINE,
                 "Per-atom virials with force strategy 'model' need output '{}' declared per_node",
                 key);
    const double *w = rows_of(key, 9);
    for (size_t r = 0, n = consolidated_rows(key); r < n; ++r)
      for (int v = 0; v < 6; ++v)
        vatom[row_atom[r]][v] += w[9 * r + 3 * VIRIAL_VOIGT[v][0] + VIRIAL_VOIGT[v][1]];
  }
}

/* ----------------------------------------------------------------------
   extra outputs, consolidated on demand (collective)
------------------------------------------------------------------------- */

const double *PairNVAlchemi::peratom_output(const char *name, int width)
{
  State &s = *state;
  auto declared = s.spec.outputs.find(name);
  if (declared == s.spec.outputs.end() || declared->second.kind != OutputKind::PER_NODE)
    error->all(FLERR, Error::NOLASTLINE,
               "Model output '{}' is not declared per_node in the spec of pair_style nvalchemi: "
               "declare it in the model's spec or with 'output {} per_node <reduce>'",
               name, name);
  if (s.evaluations == 0)
    error->all(FLERR, Error::NOLASTLINE, "Model output '{}' requested before the model ran", name);
  const NVAlchemi::OutputTensor *t = s.tensor(name);
  const size_t nrows = s.graph.row_atom.size();
  if (!t || t->shape.empty() || static_cast<size_t>(t->shape[0]) != nrows || row_width(*t) != width)
    error->all(FLERR, Error::NOLASTLINE,
               "Model output '{}' must have {} values per atom (the model returned {})", name,
               width, shape_string(t));

  State::Consolidated &c = s.consolidated[name];
  if (c.evaluation != s.evaluations) {
    c.values.assign(static_cast<size_t>(atom->nlocal + atom->nghost) * width, 0.0);
    const bool partials = sums_ghost_rows(declared->second);
    const size_t rows = partials ? nrows : s.graph.n_owned;
    for (size_t r = 0; r < rows; ++r)
      std::copy_n(&t->values[r * width], width,
                  &c.values[static_cast<size_t>(s.graph.row_atom[r]) * width]);
    if (partials) reverse_sum(c.values.data(), width);
    c.evaluation = s.evaluations;
  }
  return c.values.data();
}

const double *PairNVAlchemi::global_output(const char *name, int size)
{
  State &s = *state;
  auto declared = s.spec.outputs.find(name);
  if (declared == s.spec.outputs.end() ||
      (declared->second.kind != OutputKind::PER_GRAPH &&
       declared->second.kind != OutputKind::GLOBAL))
    error->all(FLERR, Error::NOLASTLINE,
               "Model output '{}' is not declared per_graph or global in the spec of pair_style "
               "nvalchemi: declare it in the model's spec or with 'output {} per_graph <reduce>'",
               name, name);
  if (s.evaluations == 0)
    error->all(FLERR, Error::NOLASTLINE, "Model output '{}' requested before the model ran", name);
  const NVAlchemi::OutputTensor *t = s.tensor(name);
  if (!t || t->values.size() != static_cast<size_t>(size))
    error->all(FLERR, Error::NOLASTLINE,
               "Model output '{}' must have {} values (the model returned {})", name, size,
               shape_string(t));

  State::Consolidated &c = s.consolidated[name];
  if (c.evaluation != s.evaluations) {
    c.values = t->values;
    if (declared->second.kind == OutputKind::PER_GRAPH) {
      if (declared->second.reduce == Reduce::ALL_REDUCE)
        MPI_Allreduce(t->values.data(), c.values.data(), size, MPI_DOUBLE, MPI_SUM, world);
      else    // already global and replicated: every rank reports rank 0's copy, counted once
        MPI_Bcast(c.values.data(), size, MPI_DOUBLE, 0, world);
    }    // GLOBAL passes through: each rank keeps its own value
    c.evaluation = s.evaluations;
  }
  return c.values.data();
}

/* ----------------------------------------------------------------------
   the exchange ops on model rows: rows are copied to a per-atom buffer,
   communicated, and copied back (atoms of NULL types are not rows)
------------------------------------------------------------------------- */

void PairNVAlchemi::refresh_rows(double *rows, int width)
{
  State &s = *state;
  const std::vector<int> &row_atom = s.graph.row_atom;
  s.atom_values.assign(static_cast<size_t>(atom->nlocal + atom->nghost) * width, 0.0);
  for (int r = 0; r < s.graph.n_owned; ++r)
    std::copy_n(rows + static_cast<size_t>(r) * width, width,
                &s.atom_values[static_cast<size_t>(row_atom[r]) * width]);
  forward_copy(s.atom_values.data(), width);
  for (size_t r = s.graph.n_owned; r < row_atom.size(); ++r)
    std::copy_n(&s.atom_values[static_cast<size_t>(row_atom[r]) * width], width, rows + r * width);
}

void PairNVAlchemi::sum_rows_into_owners(double *rows, int width)
{
  State &s = *state;
  const std::vector<int> &row_atom = s.graph.row_atom;
  s.atom_values.assign(static_cast<size_t>(atom->nlocal + atom->nghost) * width, 0.0);
  for (size_t r = 0; r < row_atom.size(); ++r)
    std::copy_n(rows + r * width, width, &s.atom_values[static_cast<size_t>(row_atom[r]) * width]);
  reverse_sum(s.atom_values.data(), width);
  for (int r = 0; r < s.graph.n_owned; ++r)
    std::copy_n(&s.atom_values[static_cast<size_t>(row_atom[r]) * width], width,
                rows + static_cast<size_t>(r) * width);
}

/* ----------------------------------------------------------------------
   ghost atoms of a per-atom array take their owners' values
------------------------------------------------------------------------- */

void PairNVAlchemi::forward_copy(double *values, int width)
{
  comm_values = values;
  comm_width = width;
  for (comm_offset = 0; comm_offset < width; comm_offset += comm_forward) comm->forward_comm(this);
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
   ghost-row partials of a per-atom array summed into their owners
------------------------------------------------------------------------- */

void PairNVAlchemi::reverse_sum(double *values, int width)
{
  comm_values = values;
  comm_width = width;
  for (comm_offset = 0; comm_offset < width; comm_offset += comm_reverse) comm->reverse_comm(this);
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

PairNVAlchemi::Contribution PairNVAlchemi::decomposed_contribution()
{
  State &s = *state;
  if (s.evaluations == 0)
    error->all(FLERR, Error::NOLASTLINE, "pair_style nvalchemi has not run its model yet");
  Contribution c;
  try {
    s.rank_share(s.graph, s.outputs, comm->nprocs, c, s.row_forces);
  } catch (std::exception &e) {
    error->one(FLERR, Error::NOLASTLINE, "pair_style nvalchemi: model {}: {}", s.model_file,
               e.what());
  }
  const int nlocal = atom->nlocal;
  std::vector<double> atom_forces(3 * static_cast<size_t>(nlocal + atom->nghost), 0.0);
  for (size_t r = 0; r < s.graph.row_atom.size(); ++r)
    for (int d = 0; d < 3; ++d) atom_forces[3 * s.graph.row_atom[r] + d] += s.row_forces[3 * r + d];
  reverse_sum(atom_forces.data(), 3);
  c.forces.assign(atom_forces.begin(), atom_forces.begin() + 3 * nlocal);

  double sums[7] = {c.energy,    c.virial[0], c.virial[1], c.virial[2],
                    c.virial[3], c.virial[4], c.virial[5]};
  MPI_Allreduce(MPI_IN_PLACE, sums, 7, MPI_DOUBLE, MPI_SUM, world);
  c.energy = sums[0];
  std::copy_n(sums + 1, 6, c.virial);
  return c;
}

PairNVAlchemi::Contribution PairNVAlchemi::reference_contribution(const std::vector<double> &x,
                                                                  const std::vector<int> &type)
{
  State &s = *state;
  std::vector<int64_t> atomic_numbers(type.size());
  for (size_t i = 0; i < type.size(); ++i) atomic_numbers[i] = s.atomic_number_of_type[type[i]];
  const NVAlchemi::Cell cell = NVAlchemi::box_cell(domain);
  NVAlchemi::Graph graph;
  NVAlchemi::build_periodic_graph(x, atomic_numbers, cell, cutoff, graph);
  NVAlchemi::SingleProcessExchange single_process(graph.num_rows());
  NVAlchemi::EnergyShare share = s.share;
  share.weight = 1.0;    // one process holds the whole energy
  NVAlchemi::ModelOutputs outputs;
  Contribution c;
  std::vector<double> row_forces;
  try {
    s.model->evaluate(graph, cell, share, s.exchange ? &single_process : nullptr, outputs);
    s.rank_share(graph, outputs, 1, c, row_forces);
  } catch (std::exception &e) {
    error->one(FLERR, Error::NOLASTLINE,
               "pair_style nvalchemi: model {} failed on the single-process reference: {}",
               s.model_file, e.what());
  }
  c.forces.assign(3 * type.size(), 0.0);
  for (size_t r = 0; r < graph.row_atom.size(); ++r)
    std::copy_n(&row_forces[3 * r], 3, &c.forces[3 * static_cast<size_t>(graph.row_atom[r])]);
  return c;
}

const std::vector<int> &PairNVAlchemi::atomic_number_of_type() const
{ return state->atomic_number_of_type; }

/* ---------------------------------------------------------------------- */

double PairNVAlchemi::memory_usage()
{
  const State &s = *state;
  const NVAlchemi::Graph &g = s.graph;
  double bytes = Pair::memory_usage();
  bytes += static_cast<double>(g.row_atom.capacity() + s.atom_row.capacity()) * sizeof(int);
  bytes += static_cast<double>(g.positions.capacity() + g.edge_vectors.capacity()) * sizeof(double);
  bytes += static_cast<double>(g.atomic_numbers.capacity() + g.edges.capacity()) * sizeof(int64_t);
  bytes += static_cast<double>(s.outputs.edge_gradients.capacity()) * sizeof(double);
  for (const auto &entry : s.outputs.tensors)
    bytes += static_cast<double>(entry.second.values.capacity()) * sizeof(double);
  for (const auto &entry : s.consolidated)
    bytes += static_cast<double>(entry.second.values.capacity()) * sizeof(double);
  return bytes;
}
