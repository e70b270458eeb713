/* ----------------------------------------------------------------------
   USER-NVALCHEMI: fix nvalchemi/dd hooks at their scopes.
------------------------------------------------------------------------- */

#include "nvalchemi_dd_hook.h"

#include "atom.h"
#include "comm.h"
#include "domain.h"
#include "error.h"
#include "update.h"

#include "nvalchemi_dd_hook_torch.h"
#include "nvalchemi_lammps_data.h"
#include "nvalchemi_mpi_gather.h"

#include <algorithm>
#include <numeric>

namespace LAMMPS_NS {
namespace NVAlchemi {

  bool stage_adds_forces(HookStage stage)
  { return stage == HookStage::BEFORE_COMPUTE || stage == HookStage::AFTER_COMPUTE; }

  HookRunner::HookRunner(LAMMPS *lmp, const std::string &file, HookScope scope, HookStage stage) :
      Pointers(lmp), module_file(file), scope(scope), when(stage)
  {
    std::string archive;
    if (!read_and_broadcast(lmp, file, archive))
      error->all(FLERR, "Cannot open fix nvalchemi/dd hook file {}", file);
    try {
      module = std::make_unique<HookModule>(archive);
    } catch (std::exception &e) {
      error->all(FLERR, "Cannot load fix nvalchemi/dd hook {} {}", file, e.what());
    }
  }

  HookRunner::~HookRunner() = default;

  void HookRunner::place_on(const Device &device)
  {
    try {
      module->place_on(device);
    } catch (std::exception &e) {
      // (a package is loaded here, for the device: its errors are load errors too)
      error->all(FLERR, Error::NOLASTLINE, "Cannot load fix nvalchemi/dd hook {} on device {}: {}",
                 module_file, device.str(), e.what());
    }
  }

  HookRunner::Result HookRunner::run(int groupbit, const std::vector<int> &z_of_type,
                                     bool needs_virial)
  {
    constexpr int WIDTH = 11;    // ID, type, unwrapped x, v, f
    std::vector<double> mine;
    std::vector<int> members;    // local index of each row
    for (int i = 0; i < atom->nlocal; ++i) {
      if (!(atom->mask[i] & groupbit)) continue;
      members.push_back(i);
      double unwrapped[3];
      domain->unmap(atom->x[i], atom->image[i], unwrapped);
      mine.push_back(static_cast<double>(atom->tag[i]));
      mine.push_back(atom->type[i]);
      for (double value : unwrapped) mine.push_back(value);
      for (int d = 0; d < 3; ++d) mine.push_back(atom->v[i][d]);
      for (int d = 0; d < 3; ++d) mine.push_back(atom->f[i][d]);
    }

    // the rows the module sees: this rank's (LOCAL), or the gathered group sorted by atom ID
    Gathered g;
    const std::vector<double> *rows = &mine;
    std::vector<int> order;    // row of the module's batch -> row of `rows`
    if (scope == HookScope::LOCAL) {
      order.resize(members.size());
      std::iota(order.begin(), order.end(), 0);
    } else {
      gather_rows(mine, WIDTH, scope == HookScope::GLOBAL, world, g);
      rows = &g.rows;
      order = g.by_id;
    }
    const bool calls = scope != HookScope::RANK_ZERO || comm->me == 0;

    HookOutputs result;
    std::vector<double> added;    // forces for `rows`, in their order
    if (calls) {
      HookInputs batch;
      batch.n = static_cast<int64_t>(order.size());
      batch.cell = box_cell(domain);
      for (int row : order) {
        const double *r = &(*rows)[static_cast<size_t>(row) * WIDTH];
        batch.atom_ids.push_back(static_cast<int64_t>(r[0]));
        batch.atom_types.push_back(static_cast<int64_t>(r[1]));
        if (!z_of_type.empty()) batch.atomic_numbers.push_back(z_of_type[static_cast<int>(r[1])]);
        batch.positions.insert(batch.positions.end(), r + 2, r + 5);
        batch.velocities.insert(batch.velocities.end(), r + 5, r + 8);
        batch.forces.insert(batch.forces.end(), r + 8, r + 11);
      }
      try {
        module->call(batch, result);
      } catch (std::exception &e) {
        error->one(FLERR, Error::NOLASTLINE, "Fix nvalchemi/dd hook {} failed on step {}: {}",
                   module_file, update->ntimestep, e.what());
      }
      if (needs_virial && !result.has_virial)
        error->one(FLERR, Error::NOLASTLINE,
                   "fix_modify virial yes needs fix nvalchemi/dd hook {} to return 'virial' [3,3]",
                   module_file);
      if (result.has_forces) {
        added.assign(rows->size() / WIDTH * 3, 0.0);
        for (size_t k = 0; k < order.size(); ++k)
          std::copy_n(&result.forces[3 * k], 3, &added[3 * static_cast<size_t>(order[k])]);
      }
    }

    // whether any rank's module returned forces: agreed on before anyone stops or scatters
    int has_forces = result.has_forces;
    MPI_Allreduce(MPI_IN_PLACE, &has_forces, 1, MPI_INT, MPI_MAX, world);
    if (has_forces && !stage_adds_forces(when))
      error->all(FLERR, Error::NOLASTLINE,
                 "Fix nvalchemi/dd hook {} returned forces at stage {}, where they would not act "
                 "on the step: run it at stage before_compute or after_compute, or return no "
                 "'forces'",
                 module_file, HOOK_STAGE_NAMES[static_cast<int>(when)]);

    // this rank's share of the module's forces
    std::vector<double> own(3 * members.size(), 0.0);
    if (has_forces && scope == HookScope::RANK_ZERO) {
      std::vector<int> counts(comm->nprocs), displs(comm->nprocs);
      for (int p = 0; p < comm->nprocs; ++p) {
        counts[p] = 3 * g.counts[p];
        displs[p] = 3 * g.displs[p];
      }
      MPI_Scatterv(added.data(), counts.data(), displs.data(), MPI_DOUBLE, own.data(),
                   static_cast<int>(own.size()), MPI_DOUBLE, 0, world);
    } else if (!added.empty()) {
      const size_t first = scope == HookScope::GLOBAL ? 3 * static_cast<size_t>(g.displs[comm->me])
                                                      : 0;
      std::copy_n(added.begin() + first, own.size(), own.begin());
    }
    double **f = atom->f;
    for (size_t k = 0; k < members.size(); ++k)
      for (int d = 0; d < 3; ++d) f[members[k]][d] += own[3 * k + d];

    // energy and virial: partials of each rank (LOCAL), or one value counted once
    Result out;
    out.energy = result.has_energy ? result.energy : 0.0;
    if (scope == HookScope::LOCAL)
      MPI_Allreduce(MPI_IN_PLACE, &out.energy, 1, MPI_DOUBLE, MPI_SUM, world);
    else if (scope == HookScope::RANK_ZERO)
      MPI_Bcast(&out.energy, 1, MPI_DOUBLE, 0, world);
    out.has_virial = result.has_virial && (scope == HookScope::LOCAL || comm->me == 0);
    if (out.has_virial)
      for (int v = 0; v < 6; ++v)
        out.virial[v] = result.virial[3 * VIRIAL_VOIGT[v][0] + VIRIAL_VOIGT[v][1]];
    return out;
  }

}    // namespace NVAlchemi
}    // namespace LAMMPS_NS
