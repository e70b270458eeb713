/* ----------------------------------------------------------------------
   USER-NVALCHEMI: extended-XYZ frames.
------------------------------------------------------------------------- */

#include "nvalchemi_extxyz.h"

#include "nvalchemi_metadata.h"

#include <cstdio>

namespace LAMMPS_NS {
namespace NVAlchemi {

  namespace {
    std::string real(double value)
    {
      char text[32];
      snprintf(text, sizeof(text), "%.17g", value);
      return text;
    }
  }    // namespace

  std::string extxyz_frame(const std::vector<FrameAtom> &atoms, const Cell &cell, double energy,
                           int64_t timestep)
  {
    std::string frame = std::to_string(atoms.size()) + "\nLattice=\"";
    for (int a = 0; a < 3; ++a)
      for (int c = 0; c < 3; ++c) frame += (a + c ? " " : "") + real(cell.lattice[a][c]);
    frame += "\" Properties=species:S:1:pos:R:3:forces:R:3:id:I:1 energy=" + real(energy) +
        " pbc=\"" + (cell.pbc[0] ? "T" : "F") + " " + (cell.pbc[1] ? "T" : "F") + " " +
        (cell.pbc[2] ? "T" : "F") + "\" timestep=" + std::to_string(timestep) + "\n";
    for (const FrameAtom &atom : atoms) {
      frame += atom.atomic_number > 0 ? element_symbol(atom.atomic_number) : "X";
      for (double x : atom.position) frame += " " + real(x);
      for (double f : atom.force) frame += " " + real(f);
      frame += " " + std::to_string(atom.id) + "\n";
    }
    return frame;
  }

}    // namespace NVAlchemi
}    // namespace LAMMPS_NS
