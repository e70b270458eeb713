/* ----------------------------------------------------------------------
   LAMMPS - Large-scale Atomic/Molecular Massively Parallel Simulator
   https://www.lammps.org/, Sandia National Laboratories
   LAMMPS development team: developers@lammps.org

   This software is distributed under the GNU General Public License.
   See the README file in the top-level LAMMPS directory.
------------------------------------------------------------------------- */

/* ----------------------------------------------------------------------
   compute nvalchemi/deviation: the model deviation of a committee of
   pair_style nvalchemi models (the sub-styles of hybrid/overlay), for active
   learning (USER-NVALCHEMI package)
------------------------------------------------------------------------- */

#include "compute_nvalchemi_deviation.h"

#include "atom.h"
#include "comm.h"
#include "error.h"
#include "force.h"
#include "memory.h"
#include "pair_nvalchemi.h"
#include "update.h"

#include "nvalchemi_outputs_committee.h"
#include "nvalchemi_outputs_consolidate.h"
#include "nvalchemi_step_engine.h"

#include <algorithm>
#include <array>
#include <cmath>
#include <limits>

using namespace LAMMPS_NS;

// the global vector, in the column order of DeePMD-kit's model_devi.out
enum { MAX_DEVI_V, MIN_DEVI_V, AVG_DEVI_V, MAX_DEVI_F, MIN_DEVI_F, AVG_DEVI_F, DEVI_E, NUM_VALUES };

/* ---------------------------------------------------------------------- */

ComputeNVAlchemiDeviation::ComputeNVAlchemiDeviation(LAMMPS *lmp, int narg, char **arg) :
    Compute(lmp, narg, arg)
{
  if (narg != 3) error->all(FLERR, "Usage: compute ID group nvalchemi/deviation");
  vector_flag = 1;
  size_vector = NUM_VALUES;
  extvector = 0;
  peratom_flag = 1;
  size_peratom_cols = 0;
  vector = new double[NUM_VALUES];
}

/* ---------------------------------------------------------------------- */

ComputeNVAlchemiDeviation::~ComputeNVAlchemiDeviation()
{
  delete[] vector;
  memory->destroy(vector_atom);
}

/* ---------------------------------------------------------------------- */

void ComputeNVAlchemiDeviation::init()
{
  members = PairNVAlchemi::instances(force);
  if (members.size() < 2)
    error->all(FLERR, Error::NOLASTLINE,
               "compute nvalchemi/deviation needs a committee of at least two pair_style "
               "nvalchemi models, as sub-styles of pair_style hybrid/overlay (found {}): "
               "'pair_style hybrid/overlay nvalchemi m1.pt nvalchemi m2.pt drive no ...'",
               members.size());
  for (size_t m = 1; m < members.size(); ++m)
    if (members[m]->engine().atomic_number_of_type != members[0]->engine().atomic_number_of_type)
      error->all(FLERR, Error::NOLASTLINE,
                 "compute nvalchemi/deviation: pair_style nvalchemi sub-styles 1 and {} give the "
                 "atom types different elements (or NULL): the members of a committee must "
                 "handle the same atoms, with the same pair_coeff elements",
                 m + 1);
  evaluated = -1;
}

/* ----------------------------------------------------------------------
   every member on the configuration of the last force evaluation (those
   that do not drive run their model now), consolidated; the deviations of
   the atoms the committee handles (atom types not NULL) in the group
------------------------------------------------------------------------- */

void ComputeNVAlchemiDeviation::evaluate()
{
  const bigint current = members.front()->engine().force_calls;
  if (evaluated == current) return;
  if (atom->nmax > nmax) {
    nmax = atom->nmax;
    memory->destroy(vector_atom);
    memory->create(vector_atom, nmax, "nvalchemi/deviation:vector_atom");
  }

  const int nlocal = atom->nlocal;
  std::vector<NVAlchemi::Contribution> results(members.size());
  std::vector<const double *> forces;
  std::vector<std::array<double, 6>> virials;
  std::vector<double> energies;
  bool virials_known = true;
  for (size_t m = 0; m < members.size(); ++m) {
    members[m]->evaluate_configuration();
    members[m]->decomposed_contribution(results[m]);
    forces.push_back(results[m].forces.data());
    virials.push_back({});
    std::copy_n(results[m].virial, 6, virials.back().begin());
    energies.push_back(results[m].energy);
    virials_known = virials_known && results[m].has_virial;
  }
  NVAlchemi::force_deviation(forces, nlocal, vector_atom);

  // largest, smallest, sum and count over the group's handled atoms; handled atoms overall
  const std::vector<int> &element = members.front()->engine().atomic_number_of_type;
  double largest = 0.0, smallest = HUGE_VAL, sum = 0.0;
  bigint counts[2] = {0, 0};
  for (int i = 0; i < nlocal; ++i) {
    const bool handled = element[atom->type[i]] > 0;
    counts[1] += handled ? 1 : 0;
    if (!handled || !(atom->mask[i] & groupbit)) {
      vector_atom[i] = 0.0;
      continue;
    }
    largest = std::max(largest, vector_atom[i]);
    smallest = std::min(smallest, vector_atom[i]);
    sum += vector_atom[i];
    ++counts[0];
  }
  MPI_Allreduce(MPI_IN_PLACE, &largest, 1, MPI_DOUBLE, MPI_MAX, world);
  MPI_Allreduce(MPI_IN_PLACE, &smallest, 1, MPI_DOUBLE, MPI_MIN, world);
  MPI_Allreduce(MPI_IN_PLACE, &sum, 1, MPI_DOUBLE, MPI_SUM, world);
  MPI_Allreduce(MPI_IN_PLACE, counts, 2, MPI_LMP_BIGINT, MPI_SUM, world);

  vector[MAX_DEVI_F] = counts[0] ? largest : 0.0;
  vector[MIN_DEVI_F] = counts[0] ? smallest : 0.0;
  vector[AVG_DEVI_F] = counts[0] ? sum / static_cast<double>(counts[0]) : 0.0;
  const double atoms = counts[1] ? static_cast<double>(counts[1]) : 1.0;
  vector[DEVI_E] = NVAlchemi::energy_deviation(energies, atoms);
  if (virials_known) {
    const std::array<double, 3> v = NVAlchemi::virial_deviation(virials, atoms);
    vector[MAX_DEVI_V] = v[0];
    vector[MIN_DEVI_V] = v[1];
    vector[AVG_DEVI_V] = v[2];
  } else {
    vector[MAX_DEVI_V] = vector[MIN_DEVI_V] = vector[AVG_DEVI_V] =
        std::numeric_limits<double>::quiet_NaN();
    if (!warned_virial && comm->me == 0)
      error->warning(FLERR,
                     "compute nvalchemi/deviation: a member gives no virial (force strategy "
                     "'model' without a 'virial' output); the virial deviations are NaN");
    warned_virial = true;
  }
  evaluated = current;
}

/* ---------------------------------------------------------------------- */

void ComputeNVAlchemiDeviation::compute_vector()
{
  invoked_vector = update->ntimestep;
  evaluate();
}

/* ---------------------------------------------------------------------- */

void ComputeNVAlchemiDeviation::compute_peratom()
{
  invoked_peratom = update->ntimestep;
  evaluate();
}

/* ---------------------------------------------------------------------- */

double ComputeNVAlchemiDeviation::memory_usage()
{ return static_cast<double>(nmax) * sizeof(double); }
