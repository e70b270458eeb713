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
#include "update.h"

#include "nvalchemi_graph.h"
#include "nvalchemi_metadata.h"
#include "nvalchemi_model.h"

#include <algorithm>
#include <cstdio>
#include <cstring>
#include <memory>
#include <string>
#include <vector>

using namespace LAMMPS_NS;

#ifdef NVALCHEMI_PLUGIN
static constexpr const char *BUILD_ROUTE = "plugin";
#else
static constexpr const char *BUILD_ROUTE = "built-in";
#endif

struct PairNVAlchemi::State {
  std::string model_file;
  std::unique_ptr<NVAlchemi::TorchModel> model;
  NVAlchemi::ModelMetadata metadata;
  std::vector<int> atomic_number_of_type;    // [ntypes+1], 0 for NULL types
  NVAlchemi::Graph graph;
  std::vector<int> atom_row;
  NVAlchemi::ModelOutputs outputs;
};

/* ---------------------------------------------------------------------- */

PairNVAlchemi::PairNVAlchemi(LAMMPS *lmp) : Pair(lmp), state(new State), cutoff(0.0)
{
  single_enable = 0;
  restartinfo = 0;
  one_coeff = 1;
  manybody_flag = 1;
  // per-atom virials are split evenly between the two atoms of each edge, which is not the
  // centroid form of a many-body model
  centroidstressflag = CENTROID_NOTAVAIL;
}

/* ---------------------------------------------------------------------- */

PairNVAlchemi::~PairNVAlchemi()
{
  delete state;
  if (allocated) {
    memory->destroy(setflag);
    memory->destroy(cutsq);
  }
}

/* ---------------------------------------------------------------------- */

void PairNVAlchemi::allocate()
{
  allocated = 1;
  const int n = atom->ntypes + 1;
  memory->create(setflag, n, n, "pair:setflag");
  memory->create(cutsq, n, n, "pair:cutsq");
  map = new int[n];    // freed by Pair::~Pair()
}

/* ----------------------------------------------------------------------
   pair_style nvalchemi <model.pt>
------------------------------------------------------------------------- */

void PairNVAlchemi::settings(int narg, char **arg)
{
  if (narg < 1) utils::missing_cmd_args(FLERR, "pair_style nvalchemi", error);
  for (int iarg = 1; iarg < narg; ++iarg)
    error->all(FLERR, iarg + 1, "Unknown pair_style nvalchemi keyword: {}", arg[iarg]);
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
  static constexpr int CHUNK = 1 << 30;    // MPI counts are ints
  std::string archive;
  bigint size = -1;
  if (comm->me == 0) {
    const std::string path = utils::get_potential_file_path(file);
    FILE *fp = path.empty() ? nullptr : fopen(path.c_str(), "rb");
    if (fp) {
      char buffer[1 << 16];
      size_t n;
      while ((n = fread(buffer, 1, sizeof(buffer), fp)) > 0) archive.append(buffer, n);
      if (!ferror(fp)) size = static_cast<bigint>(archive.size());
      fclose(fp);
    }
  }
  MPI_Bcast(&size, 1, MPI_LMP_BIGINT, 0, world);
  if (size < 0)
    error->all(FLERR, 1,
               "Cannot open pair_style nvalchemi model file {}: check the path (relative paths "
               "are also searched in $LAMMPS_POTENTIALS)",
               file);
  archive.resize(size);
  for (bigint offset = 0; offset < size; offset += CHUNK)
    MPI_Bcast(&archive[offset], static_cast<int>(std::min<bigint>(CHUNK, size - offset)), MPI_CHAR,
              0, world);

  state->model_file = file;
  try {
    state->model = std::make_unique<NVAlchemi::TorchModel>(archive);
  } catch (std::exception &e) {
    error->all(FLERR, 1, "Cannot load {} as a TorchScript model: {}", file, e.what());
  }

  const std::string &text = state->model->metadata_text();
  if (text.empty())
    error->all(FLERR, 1,
               "Model {} has no USER-NVALCHEMI metadata ({} inside the archive); export it with "
               "potentials/nvalchemi_export.py (save_model), see doc/Howto_nvalchemi_contract.rst",
               file, NVAlchemi::METADATA_FILE);
  try {
    state->metadata = NVAlchemi::parse_metadata(text);
  } catch (std::exception &e) {
    error->all(FLERR, 1, "Model {} has invalid metadata: {}", file, e.what());
  }
  const NVAlchemi::ModelMetadata &meta = state->metadata;

  if (meta.units != update->unit_style)
    error->all(FLERR, 1,
               "Model {} works in '{}' units but this run uses 'units {}': use 'units {}' before "
               "the box is defined, or export the model for '{}' units",
               file, meta.units, update->unit_style, meta.units, update->unit_style);
  if (meta.halo != "local" || meta.num_message_passing_layers > 1)
    error->all(FLERR, 1,
               "Model {} needs halo mode '{}' ({} message-passing layers), but this version of "
               "pair_style nvalchemi runs strictly local models (halo mode 'local') only",
               file, meta.halo, meta.num_message_passing_layers);

  cutoff = meta.cutoff;
  state->model->set_float64(meta.dtype == "float64");

  if (comm->me == 0) {
    std::string species;
    for (int z : meta.species) species += " " + NVAlchemi::element_symbol(z);
    utils::logmesg(lmp,
                   "pair_style nvalchemi ({}): model {}, contract v{}, units {}, {}, cutoff {}, "
                   "halo {}, species:{}\n",
                   BUILD_ROUTE, file, meta.contract_version, meta.units, meta.dtype, meta.cutoff,
                   meta.halo, species);
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
      error->all(FLERR, "Model {} has no parameters for element {}; it knows:{}",
                 state->model_file, elements[e], known);
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
  neighbor->add_request(this, NeighConst::REQ_FULL);
  NVAlchemi::TorchModel::set_num_threads(comm->nthreads);
}

/* ---------------------------------------------------------------------- */

double PairNVAlchemi::init_one(int /*i*/, int /*j*/)
{
  return cutoff;
}

/* ----------------------------------------------------------------------
   one model call per step on owned + ghost rows; energy is the sum over
   owned rows, forces follow from its gradient with respect to the edge
   vectors: an edge r_ij = x_i - x_j with gradient g pulls -g on the
   receiver i and +g on the sender j (ghost forces go home by reverse
   comm), and contributes -r_ij (x) g to the virial
------------------------------------------------------------------------- */

void PairNVAlchemi::compute(int eflag, int vflag)
{
  ev_init(eflag, vflag);

  State &s = *state;
  double **x = atom->x;
  double **f = atom->f;
  const int nlocal = atom->nlocal;

  const NVAlchemi::AtomsView atoms{x, atom->type, s.atomic_number_of_type.data(), nlocal,
                                   nlocal + atom->nghost};
  const NVAlchemi::NeighborView neighbors{list->inum, list->ilist, list->numneigh,
                                          list->firstneigh, NEIGHMASK};
  NVAlchemi::build_graph(atoms, neighbors, cutoff, s.graph, s.atom_row);

  NVAlchemi::Cell cell = {{{domain->xprd, 0.0, 0.0},
                           {domain->xy, domain->yprd, 0.0},
                           {domain->xz, domain->yz, domain->zprd}},
                          {domain->xperiodic != 0, domain->yperiodic != 0, domain->zperiodic != 0}};
  try {
    s.model->evaluate(s.graph, cell, s.outputs);
  } catch (std::exception &e) {
    error->one(FLERR, Error::NOLASTLINE, "pair_style nvalchemi: model {} failed on step {}: {}",
               s.model_file, update->ntimestep, e.what());
  }

  const std::vector<int> &row_atom = s.graph.row_atom;
  if (eflag_either) {
    for (int r = 0; r < s.graph.n_owned; ++r) {
      const double e = s.outputs.atomic_energies[r];
      if (eflag_global) eng_vdwl += e;
      if (eflag_atom) eatom[row_atom[r]] += e;
    }
  }

  const int64_t *edges = s.graph.edges.data();
  const double *rij = s.graph.edge_vectors.data();
  const double *grad = s.outputs.edge_gradients.data();
  const int64_t nedges = s.graph.num_edges();
  for (int64_t e = 0; e < nedges; ++e) {
    const int j = row_atom[edges[2 * e]];
    const int i = row_atom[edges[2 * e + 1]];
    const double *g = grad + 3 * e;
    f[i][0] -= g[0];
    f[i][1] -= g[1];
    f[i][2] -= g[2];
    f[j][0] += g[0];
    f[j][1] += g[1];
    f[j][2] += g[2];
    if (vflag_either) {
      const double *r = rij + 3 * e;
      ev_tally_xyz(i, j, nlocal, 1, 0.0, 0.0, -g[0], -g[1], -g[2], r[0], r[1], r[2]);
    }
  }

  if (vflag_fdotr) virial_fdotr_compute();
}

/* ---------------------------------------------------------------------- */

double PairNVAlchemi::memory_usage()
{
  const NVAlchemi::Graph &g = state->graph;
  double bytes = Pair::memory_usage();
  bytes += static_cast<double>(g.row_atom.capacity() + state->atom_row.capacity()) * sizeof(int);
  bytes += static_cast<double>(g.positions.capacity() + g.edge_vectors.capacity()) * sizeof(double);
  bytes += static_cast<double>(g.atomic_numbers.capacity() + g.edges.capacity()) * sizeof(int64_t);
  bytes += static_cast<double>(state->outputs.atomic_energies.capacity() +
                               state->outputs.edge_gradients.capacity()) *
      sizeof(double);
  return bytes;
}
