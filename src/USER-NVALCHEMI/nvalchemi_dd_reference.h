/* -*- c++ -*- ----------------------------------------------------------
   USER-NVALCHEMI: the single-process reference (the model on a whole periodic system in one
   process, every atom owned, images as shifted edge vectors) and its comparison with the
   decomposed result: nvalchemi's trace_and_validate, as fix nvalchemi/dd validate runs it.
   Plain C++17: no LAMMPS classes, no LibTorch headers, no MPI.
------------------------------------------------------------------------- */

#ifndef LMP_NVALCHEMI_DD_REFERENCE_H
#define LMP_NVALCHEMI_DD_REFERENCE_H

#include "nvalchemi_outputs_consolidate.h"
#include "nvalchemi_runner.h"

#include <string>
#include <vector>

namespace LAMMPS_NS {
namespace NVAlchemi {

  // `model` on the atoms (positions [n][3], atomic numbers [n], 0 for atoms it does not handle)
  // in `cell`, with `spec` and `share` as the decomposed run resolved them. Forces in input
  // order. Throws std::runtime_error (the model's message) or OutputError.
  Contribution reference_contribution(ModelRunner &model, const MLIPSpec &spec,
                                      const EnergyShare &share,
                                      const std::vector<double> &positions,
                                      const std::vector<int64_t> &atomic_numbers, const Cell &cell,
                                      double cutoff);

  // Largest absolute difference, and relative to the largest reference value (or to `scale`,
  // when larger: values that cancel to nearly zero are judged against their terms).
  struct Difference {
    double abs = 0.0, rel = 0.0;
  };
  Difference compare(const double *values, const double *reference, size_t n, double scale = 0.0);

  // Energy, forces (same atom order in both) and, where both have it, the virial.
  struct Validation {
    double worst = 0.0;    // largest relative difference
    std::string report;    // "energy 1e-16 (2e-17 relative), forces ..."
  };
  Validation validate(const Contribution &decomposed, const Contribution &reference);

}    // namespace NVAlchemi
}    // namespace LAMMPS_NS

#endif
