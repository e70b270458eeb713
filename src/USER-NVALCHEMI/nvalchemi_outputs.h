/* -*- c++ -*- ----------------------------------------------------------
   USER-NVALCHEMI: what one model call returns, in plain C++ (double precision on the host; the
   edge gradients on the device for a graph kept there), and the energy share it differentiates:
   the types the runners fill and the consolidation reads. No LibTorch, no LAMMPS.
------------------------------------------------------------------------- */

#ifndef LMP_NVALCHEMI_OUTPUTS_H
#define LMP_NVALCHEMI_OUTPUTS_H

#include <chrono>
#include <cstdint>
#include <map>
#include <memory>
#include <stdexcept>
#include <string>
#include <vector>

namespace LAMMPS_NS {
namespace NVAlchemi {

  // Seconds since `start`: the phase times of a model call (ModelOutputs) and of a step.
  using Clock = std::chrono::steady_clock;
  inline double seconds_since(Clock::time_point start)
  { return std::chrono::duration<double>(Clock::now() - start).count(); }

  // One model output in double precision: its shape as returned, values row-major.
  struct OutputTensor {
    std::vector<int64_t> shape;
    std::vector<double> values;
  };

  // The scalar this rank differentiates for framework forces: its share L_r of the total
  // energy, with the shares of all ranks summing to the total (doc/Howto_nvalchemi_spec.rst).
  struct EnergyShare {
    std::string key;              // energy output: node energies or a per-system energy
    bool owned_rows = true;       // sum rows [0, n_owned) only (owned node energies)
    double weight = 1.0;          // 1/nprocs for an energy replicated on every rank
    bool differentiate = true;    // false: the model returns its own forces
  };

  // Read-only values that live in memory LibTorch owns (a tensor), kept alive by the view.
  struct SharedValues {
    std::shared_ptr<const double> data;    // nullptr: no values
    int64_t count = 0;
    const double *get() const { return data.get(); }
    int64_t size() const { return count; }
    bool empty() const { return count == 0; }
    const double &operator[](int64_t k) const { return data.get()[k]; }
  };

  struct ModelOutputs {
    std::map<std::string, OutputTensor> tensors;    // every output the model returned
    // [edges][3]: dL_r / d edge_vectors of the real edges; none when L_r does not depend on them
    // or when they stay on the device (below)
    SharedValues edge_gradients;
    // For a graph the model read where its builder keeps it (Graph::resident), the same
    // gradients (double) stay on that device until the next call: edge_gradients is then empty
    // and the builder copies them to the host where it needs them.
    SharedValues resident_edge_gradients;

    // edge_gradients (nullptr: none), for code that reads them on the host. Throws
    // std::logic_error while they are on the device only: the caller should have had them
    // copied to the host first (a bug of the package, never silently no forces).
    const double *host_edge_gradients() const
    {
      if (edge_gradients.empty() && !resident_edge_gradients.empty())
        throw std::logic_error("the edge gradients are on the device only: copy them to the "
                               "host before reading them there");
      return edge_gradients.get();
    }
    double energy_share = 0.0;    // L_r
    // wall times of the call: converting inputs to tensors and outputs back; the model's forward
    // and backward (the gradient the package takes; 0 for a program holding its own backward),
    // exchange calls made in them included
    double marshal_seconds = 0.0, forward_seconds = 0.0, backward_seconds = 0.0;
  };

}    // namespace NVAlchemi
}    // namespace LAMMPS_NS

#endif
