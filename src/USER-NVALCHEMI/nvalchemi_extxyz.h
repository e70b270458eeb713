/* -*- c++ -*- ----------------------------------------------------------
   USER-NVALCHEMI: one extended-XYZ frame in full precision, as ASE reads it (fix nvalchemi/dd
   snapshot). Plain C++17.
------------------------------------------------------------------------- */

#ifndef LMP_NVALCHEMI_EXTXYZ_H
#define LMP_NVALCHEMI_EXTXYZ_H

#include "nvalchemi_graph.h"

#include <cstdint>
#include <string>
#include <vector>

namespace LAMMPS_NS {
namespace NVAlchemi {

  struct FrameAtom {
    int64_t id;
    int atomic_number;    // 0: written as species X
    double position[3], force[3];
  };

  // Header (Lattice, Properties, energy, pbc, timestep) and one line per atom, in the given
  // order, every real number with 17 significant digits.
  std::string extxyz_frame(const std::vector<FrameAtom> &atoms, const Cell &cell, double energy,
                           int64_t timestep);

}    // namespace NVAlchemi
}    // namespace LAMMPS_NS

#endif
