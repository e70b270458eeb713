/* ----------------------------------------------------------------------
   LAMMPS - Large-scale Atomic/Molecular Massively Parallel Simulator
   https://www.lammps.org/, Sandia National Laboratories
   LAMMPS development team: developers@lammps.org

   This software is distributed under the GNU General Public License.
   See the README file in the top-level LAMMPS directory.
------------------------------------------------------------------------- */

/* ----------------------------------------------------------------------
   compute nvalchemi/atom: a per-atom model output of pair_style nvalchemi
   (USER-NVALCHEMI package)
------------------------------------------------------------------------- */

#include "compute_nvalchemi_atom.h"

#include "atom.h"
#include "error.h"
#include "force.h"
#include "memory.h"
#include "pair_nvalchemi.h"
#include "update.h"

#include <algorithm>

using namespace LAMMPS_NS;

/* ---------------------------------------------------------------------- */

ComputeNVAlchemiAtom::ComputeNVAlchemiAtom(LAMMPS *lmp, int narg, char **arg) :
    Compute(lmp, narg, arg), output(nullptr), width(1), nmax(0), pair(nullptr)
{
  if (narg < 4 || narg > 5)
    error->all(FLERR, "Usage: compute ID group nvalchemi/atom <output> [width]");
  output = utils::strdup(arg[3]);
  if (narg == 5) width = utils::inumeric(FLERR, arg[4], false, lmp);
  if (width < 1) error->all(FLERR, 4, "compute nvalchemi/atom width must be at least 1");

  peratom_flag = 1;
  size_peratom_cols = width == 1 ? 0 : width;
}

/* ---------------------------------------------------------------------- */

ComputeNVAlchemiAtom::~ComputeNVAlchemiAtom()
{
  delete[] output;
  memory->destroy(vector_atom);
  memory->destroy(array_atom);
}

/* ---------------------------------------------------------------------- */

void ComputeNVAlchemiAtom::init()
{
  pair = dynamic_cast<PairNVAlchemi *>(force->pair_match("^nvalchemi", 0));
  if (!pair)
    error->all(
        FLERR, Error::NOLASTLINE,
        "compute nvalchemi/atom needs exactly one pair_style nvalchemi (alone or in a hybrid)");
}

/* ---------------------------------------------------------------------- */

void ComputeNVAlchemiAtom::compute_peratom()
{
  invoked_peratom = update->ntimestep;
  if (atom->nmax > nmax) {
    nmax = atom->nmax;
    if (width == 1) {
      memory->destroy(vector_atom);
      memory->create(vector_atom, nmax, "nvalchemi/atom:vector_atom");
    } else {
      memory->destroy(array_atom);
      memory->create(array_atom, nmax, width, "nvalchemi/atom:array_atom");
    }
  }

  const double *values = pair->consolidated_output(output, true, width);
  const int *mask = atom->mask;
  for (int i = 0; i < atom->nlocal; ++i) {
    double *row = width == 1 ? &vector_atom[i] : array_atom[i];
    if (mask[i] & groupbit)
      std::copy_n(values + static_cast<size_t>(i) * width, width, row);
    else
      std::fill_n(row, width, 0.0);
  }
}

/* ---------------------------------------------------------------------- */

double ComputeNVAlchemiAtom::memory_usage()
{ return static_cast<double>(nmax) * width * sizeof(double); }
