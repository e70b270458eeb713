/* ----------------------------------------------------------------------
   USER-NVALCHEMI: force checks, drift fit and snapshot frames of fix nvalchemi/dd.
------------------------------------------------------------------------- */

#include "nvalchemi_dd_monitor.h"

#include "nvalchemi_model_metadata.h"

#include <cmath>
#include <cstdio>

namespace LAMMPS_NS {
namespace NVAlchemi {

  ForceCheck check_forces(double **f, const int *mask, int groupbit, int n, double max_force,
                          bool clamp, int named)
  {
    ForceCheck check;
    const double max_sq = max_force * max_force;
    for (int i = 0; i < n; ++i) {
      if (!(mask[i] & groupbit)) continue;
      const double fsq = f[i][0] * f[i][0] + f[i][1] * f[i][1] + f[i][2] * f[i][2];
      if (!std::isfinite(fsq)) {
        if (check.non_finite++ < named) check.non_finite_atoms.push_back(i);
      } else if (max_force > 0.0 && fsq > max_sq) {
        if (clamp) {
          const double scale = max_force / std::sqrt(fsq);
          for (int d = 0; d < 3; ++d) f[i][d] *= scale;
          ++check.clamped;
        } else if (check.too_large++ < named) {
          check.too_large_atoms.push_back(i);
        }
      }
    }
    return check;
  }

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
