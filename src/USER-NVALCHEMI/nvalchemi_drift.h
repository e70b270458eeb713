/* -*- c++ -*- ----------------------------------------------------------
   USER-NVALCHEMI: energy drift, the least-squares slope of the total energy per atom over a
   sliding window of samples (fix nvalchemi/dd drift). Plain C++17.
------------------------------------------------------------------------- */

#ifndef LMP_NVALCHEMI_DRIFT_H
#define LMP_NVALCHEMI_DRIFT_H

#include <cstdint>
#include <deque>
#include <utility>
#include <vector>

namespace LAMMPS_NS {
namespace NVAlchemi {

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

}    // namespace NVAlchemi
}    // namespace LAMMPS_NS

#endif
