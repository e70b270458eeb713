/* ----------------------------------------------------------------------
   USER-NVALCHEMI: energy drift by least squares over a sliding window.
------------------------------------------------------------------------- */

#include "nvalchemi_drift.h"

namespace LAMMPS_NS {
namespace NVAlchemi {

  void DriftFit::set_window(int samples_in_window)
  {
    window = samples_in_window;
    trim();
  }

  void DriftFit::trim()
  {
    while (static_cast<int>(samples.size()) > window) samples.pop_front();
  }

  bool DriftFit::add(int64_t step, double energy_per_atom)
  {
    samples.emplace_back(step, energy_per_atom);
    trim();
    if (static_cast<int>(samples.size()) < window) return false;

    double mean_t = 0.0, mean_e = 0.0;
    for (const auto &sample : samples) {
      mean_t += static_cast<double>(sample.first);
      mean_e += sample.second;
    }
    mean_t /= window;
    mean_e /= window;
    double stt = 0.0, ste = 0.0;
    for (const auto &sample : samples) {
      const double dt = static_cast<double>(sample.first) - mean_t;
      stt += dt * dt;
      ste += dt * (sample.second - mean_e);
    }
    fitted = ste / stt;
    return true;
  }

  std::vector<double> DriftFit::state() const
  {
    std::vector<double> list = {fitted, static_cast<double>(samples.size())};
    for (const auto &sample : samples) {
      list.push_back(static_cast<double>(sample.first));
      list.push_back(sample.second);
    }
    return list;
  }

  void DriftFit::restore(const double *state)
  {
    fitted = state[0];
    const int nsamples = static_cast<int>(state[1]);
    samples.clear();
    for (int k = 0; k < nsamples; ++k)
      samples.emplace_back(static_cast<int64_t>(state[2 + 2 * k]), state[3 + 2 * k]);
    trim();
  }

}    // namespace NVAlchemi
}    // namespace LAMMPS_NS
