/* ----------------------------------------------------------------------
   USER-NVALCHEMI: the single-process reference and validation.
------------------------------------------------------------------------- */

#include "nvalchemi_dd_reference.h"

#include <algorithm>
#include <cmath>
#include <cstdio>

namespace LAMMPS_NS {
namespace NVAlchemi {

  Contribution reference_contribution(ModelRunner &model, const MLIPSpec &spec,
                                      const EnergyShare &decomposed_share,
                                      const std::vector<double> &positions,
                                      const std::vector<int64_t> &atomic_numbers, const Cell &cell,
                                      double cutoff)
  {
    Graph graph;
    build_periodic_graph(positions, atomic_numbers, cell, cutoff, graph);
    SingleProcessExchange single_process(graph.num_rows());
    EnergyShare share = decomposed_share;
    share.weight = 1.0;    // one process holds the whole energy
    ModelOutputs outputs;
    model.evaluate(graph, cell, share, &single_process, outputs);
    Contribution c;
    std::vector<double> row_forces;
    rank_contribution(spec, share, graph, outputs, cell_volume(cell), 1, c, row_forces);
    rows_to_atoms(graph, row_forces.data(), graph.num_rows(), 3, atomic_numbers.size(), c.forces);
    return c;
  }

  Difference compare(const double *values, const double *reference, size_t n, double scale)
  {
    double diff = 0.0;
    for (size_t k = 0; k < n; ++k) {
      diff = std::max(diff, std::fabs(values[k] - reference[k]));
      scale = std::max(scale, std::fabs(reference[k]));
    }
    return {diff, scale > 0.0 ? diff / scale : diff};
  }

  namespace {
    // "name abs (rel)"; the first of a report says "(rel relative)"
    std::string format(const char *name, const Difference &d, bool first = false)
    {
      char text[96];
      snprintf(text, sizeof(text), "%s %.3g (%.3g%s)", name, d.abs, d.rel,
               first ? " relative" : "");
      return text;
    }
  }    // namespace

  Validation validate(const Contribution &decomposed, const Contribution &reference)
  {
    const Difference energy = compare(&decomposed.energy, &reference.energy, 1);
    const Difference forces = compare(decomposed.forces.data(), reference.forces.data(),
                                      reference.forces.size(), reference.force_scale);
    Validation v;
    v.worst = std::max(energy.rel, forces.rel);
    v.report = format("energy", energy, true) + ", " + format("forces", forces);
    if (reference.has_virial && decomposed.has_virial) {
      const Difference virial = compare(decomposed.virial, reference.virial, 6);
      v.worst = std::max(v.worst, virial.rel);
      v.report += ", " + format("virial", virial);
    } else {
      v.report += ", virial not compared (the spec declares no 'virial' or 'stress' of the model)";
    }
    return v;
  }

}    // namespace NVAlchemi
}    // namespace LAMMPS_NS
