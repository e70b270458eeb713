/* ----------------------------------------------------------------------
   LAMMPS - Large-scale Atomic/Molecular Massively Parallel Simulator
   https://www.lammps.org/, Sandia National Laboratories
   LAMMPS development team: developers@lammps.org

   This software is distributed under the GNU General Public License.
   See the README file in the top-level LAMMPS directory.
------------------------------------------------------------------------- */

/* ----------------------------------------------------------------------
   compute nvalchemi/global: a per-system model output of pair_style
   nvalchemi (USER-NVALCHEMI package)
------------------------------------------------------------------------- */

#include "compute_nvalchemi_global.h"

#include "error.h"
#include "force.h"
#include "pair_nvalchemi.h"
#include "update.h"

#include <algorithm>

using namespace LAMMPS_NS;

/* ---------------------------------------------------------------------- */

ComputeNVAlchemiGlobal::ComputeNVAlchemiGlobal(LAMMPS *lmp, int narg, char **arg) :
    Compute(lmp, narg, arg), output(nullptr), size(1), pair(nullptr)
{
  if (narg < 4 || narg > 5)
    error->all(FLERR, "Usage: compute ID group nvalchemi/global <output> [size]");
  output = utils::strdup(arg[3]);
  if (narg == 5) size = utils::inumeric(FLERR, arg[4], false, lmp);
  if (size < 1) error->all(FLERR, 4, "compute nvalchemi/global size must be at least 1");

  if (size == 1) {
    scalar_flag = 1;
    extscalar = 0;
  } else {
    vector_flag = 1;
    size_vector = size;
    extvector = 0;
    vector = new double[size];
  }
}

/* ---------------------------------------------------------------------- */

ComputeNVAlchemiGlobal::~ComputeNVAlchemiGlobal()
{
  delete[] output;
  delete[] vector;
}

/* ---------------------------------------------------------------------- */

void ComputeNVAlchemiGlobal::init()
{
  pair = dynamic_cast<PairNVAlchemi *>(force->pair_match("^nvalchemi", 0));
  if (!pair)
    error->all(FLERR, Error::NOLASTLINE,
               "compute nvalchemi/global needs exactly one pair_style nvalchemi (alone or in a "
               "hybrid)");
}

/* ---------------------------------------------------------------------- */

double ComputeNVAlchemiGlobal::compute_scalar()
{
  invoked_scalar = update->ntimestep;
  scalar = pair->consolidated_output(output, false, 1)[0];
  return scalar;
}

/* ---------------------------------------------------------------------- */

void ComputeNVAlchemiGlobal::compute_vector()
{
  invoked_vector = update->ntimestep;
  std::copy_n(pair->consolidated_output(output, false, size), size, vector);
}
