/* -*- c++ -*- ----------------------------------------------------------
   USER-NVALCHEMI: the plain-C++ halves of fix nvalchemi/dd's monitors: the force check of
   guard on one rank's atoms, the drift fit, one snapshot frame. Plain C++17: no LAMMPS
   classes, no LibTorch, no MPI.
------------------------------------------------------------------------- */

#ifndef LMP_NVALCHEMI_DD_MONITOR_H
#define LMP_NVALCHEMI_DD_MONITOR_H

#include "nvalchemi_rank_graph_build.h"

#include <cstdint>
#include <deque>
#include <string>
#include <utility>
#include <vector>

namespace LAMMPS_NS {
namespace NVAlchemi {

  // ---- guard: non-finite forces, forces above a limit (named, or clamped to it)

  struct ForceCheck {
    int64_t non_finite = 0, too_large = 0, clamped = 0;    // counts on this rank
    std::vector<int> non_finite_atoms, too_large_atoms;    // the first `named` of each
  };

  // Checks the forces f[i] of the atoms i < n with mask[i] & groupbit; `max_force` 0 checks
  // finiteness only. With `clamp`, forces above max_force are scaled to it in place (direction
  // kept) instead of being reported.
  ForceCheck check_forces(double **f, const int *mask, int groupbit, int n, double max_force,
                          bool clamp, int named);

  // ---- drift: the least-squares slope of the total energy per atom over a sliding window of
  // samples

  class DriftFit {
   public:
    explicit DriftFit(int window = 2) : window(window) {}
    void set_window(int samples);
    // adds a sample; returns true when the window is full and slope() is current
    bool add(int64_t step, double energy_per_atom);
    double slope() const { return fitted; }    // energy per atom per step; 0 until full

    // the state kept in restart files: slope, number of samples, then (step, energy) pairs
    std::vector<double> state() const;
    void restore(const double *state);

   private:
    int window;
    std::deque<std::pair<int64_t, double>> samples;
    double fitted = 0.0;
    void trim();
  };

  // ---- snapshot: one extended-XYZ frame in full precision, as ASE reads it

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
