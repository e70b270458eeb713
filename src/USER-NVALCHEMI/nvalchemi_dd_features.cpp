/* ----------------------------------------------------------------------
   USER-NVALCHEMI: the features of fix nvalchemi/dd.
------------------------------------------------------------------------- */

#include "nvalchemi_dd_features.h"

#include "atom.h"
#include "comm.h"
#include "compute.h"
#include "domain.h"
#include "error.h"
#include "force.h"
#include "input.h"
#include "pair_nvalchemi.h"
#include "update.h"
#include "variable.h"

#include "nvalchemi_dd_reference.h"
#include "nvalchemi_lammps_data.h"
#include "nvalchemi_mpi_gather.h"
#include "nvalchemi_outputs_consolidate.h"

#include <algorithm>
#include <cmath>

namespace LAMMPS_NS {
namespace NVAlchemi {

  namespace {
    // atoms named in a guard error, per rank
    constexpr int GUARD_REPORTED = 8;
  }    // namespace

  /* ----------------------------------------------------------------------
     guard: non-finite total forces (from any style or fix: pair_style
     nvalchemi stops its own model's on the rank that has them)
  ------------------------------------------------------------------------- */

  void ForceGuard::check(int groupbit, const std::string &reported_as)
  {
    const ForceCheck found =
        check_forces(atom->f, atom->mask, groupbit, atom->nlocal, max_force, clamp, GUARD_REPORTED);
    bigint counts[3] = {found.non_finite, found.too_large, found.clamped};
    MPI_Allreduce(MPI_IN_PLACE, counts, 3, MPI_LMP_BIGINT, MPI_SUM, world);
    if (counts[2]) {
      clamped += counts[2];
      if (!warned && comm->me == 0)
        error->warning(FLERR,
                       "Fix nvalchemi/dd guard clamped {} forces above {} on step {}; the total "
                       "is reported in {}",
                       counts[2], max_force, update->ntimestep, reported_as);
      warned = true;
    }
    if (!counts[0] && !counts[1]) return;

    // name the atoms (and ranks) on rank 0: ID, rank, kind (0 non-finite, 1 too large)
    std::vector<double> mine;
    const double me = comm->me;
    for (int i : found.non_finite_atoms) mine.insert(mine.end(), {1.0 * atom->tag[i], me, 0.0});
    for (int i : found.too_large_atoms) mine.insert(mine.end(), {1.0 * atom->tag[i], me, 1.0});
    const std::vector<double> rows = gather_by_id(mine, 3, world);
    std::string atoms[2];
    for (size_t r = 0; r < rows.size(); r += 3)
      atoms[static_cast<int>(rows[r + 2])] +=
          fmt::format(" {} (rank {})", static_cast<bigint>(rows[r]), static_cast<int>(rows[r + 1]));
    std::string message;
    if (counts[0])
      message += fmt::format("non-finite forces on {} atoms, IDs:{}; ", counts[0], atoms[0]);
    if (counts[1])
      message += fmt::format("forces above maxforce {} on {} atoms, IDs:{}; ", max_force, counts[1],
                             atoms[1]);
    error->all(FLERR, Error::NOLASTLINE,
               "Fix nvalchemi/dd guard on step {}: {}(at most {} atoms named per rank)",
               update->ntimestep, message, GUARD_REPORTED);
  }

  /* ---------------------------------------------------------------------- */

  void EnergyDrift::sample(Compute *pe)
  {
    double kinetic = 0.0;
    for (int i = 0; i < atom->nlocal; ++i) {
      const double m = atom->rmass ? atom->rmass[i] : atom->mass[atom->type[i]];
      const double *v = atom->v[i];
      kinetic += m * (v[0] * v[0] + v[1] * v[1] + v[2] * v[2]);
    }
    MPI_Allreduce(MPI_IN_PLACE, &kinetic, 1, MPI_DOUBLE, MPI_SUM, world);
    kinetic *= 0.5 * force->mvv2e;
    const double total = (pe->compute_scalar() + kinetic) / std::max<bigint>(1, atom->natoms);
    if (!fit.add(update->ntimestep, total)) return;
    const double drift = fit.slope();

    const bool above = std::fabs(drift) > tolerance;
    if (above && stops)
      error->all(FLERR, Error::NOLASTLINE,
                 "Fix nvalchemi/dd drift: total energy drifts by {:.4g} per atom per step over "
                 "the last {} samples on step {}, above the tolerance {:.4g}",
                 drift, window, update->ntimestep, tolerance);
    if (above && !warned && comm->me == 0)
      error->warning(FLERR,
                     "Fix nvalchemi/dd drift: total energy drifts by {:.4g} per atom per step "
                     "over the last {} samples on step {}, above the tolerance {:.4g}",
                     drift, window, update->ntimestep, tolerance);
    warned = above;
  }

  /* ---------------------------------------------------------------------- */

  void Validator::check(PairNVAlchemi *model)
  {
    Contribution decomposed;
    model->decomposed_contribution(decomposed);

    constexpr int WIDTH = 8;    // ID, type, x, decomposed force
    std::vector<double> mine;
    mine.reserve(static_cast<size_t>(atom->nlocal) * WIDTH);
    for (int i = 0; i < atom->nlocal; ++i) {
      mine.push_back(static_cast<double>(atom->tag[i]));
      mine.push_back(atom->type[i]);
      for (int d = 0; d < 3; ++d) mine.push_back(atom->x[i][d]);
      for (int d = 0; d < 3; ++d) mine.push_back(decomposed.forces[3 * i + d]);
    }
    const std::vector<double> rows = gather_by_id(mine, WIDTH, world);

    Validation result;
    if (comm->me == 0) {
      const size_t natoms = rows.size() / WIDTH;
      std::vector<double> x(3 * natoms);
      std::vector<int> type(natoms);
      decomposed.forces.resize(3 * natoms);    // now in atom-ID order, as the reference's
      for (size_t k = 0; k < natoms; ++k) {
        const double *row = &rows[k * WIDTH];
        type[k] = static_cast<int>(row[1]);
        std::copy_n(row + 2, 3, &x[3 * k]);
        std::copy_n(row + 5, 3, &decomposed.forces[3 * k]);
      }
      Contribution reference;
      model->reference_contribution(x, type, reference);
      result = validate(decomposed, reference);
      utils::logmesg(lmp,
                     "fix nvalchemi/dd validate step {}: largest differences from the "
                     "single-process reference: {}\n",
                     update->ntimestep, result.report);
    }
    MPI_Bcast(&result.worst, 1, MPI_DOUBLE, 0, world);
    ++validations;
    difference = result.worst;
    if (!(result.worst <= tolerance))
      error->all(FLERR, Error::NOLASTLINE,
                 "Fix nvalchemi/dd validate: on step {} the decomposed run differs from the "
                 "single-process reference by {:.3g} relative, above the tolerance {:.3g}{}. "
                 "Check the model's spec (halo mode, output reductions, force strategy)",
                 update->ntimestep, result.worst, tolerance,
                 comm->me == 0 ? " (" + result.report + ")" : "");
  }

  /* ---------------------------------------------------------------------- */

  Snapshots::~Snapshots()
  {
    if (fp) fclose(fp);
  }

  void Snapshots::open(const std::string &path)
  {
    file = path;
    if (comm->me != 0) return;
    fp = fopen(file.c_str(), "w");
    if (!fp)
      error->one(FLERR, "Cannot open fix nvalchemi/dd snapshot file {}: {}", file,
                 utils::getsyserror());
  }

  void Snapshots::find_condition()
  {
    if (condition.empty()) return;
    variable = input->variable->find(condition.c_str());
    if (variable < 0)
      error->all(FLERR, Error::NOLASTLINE,
                 "Variable {} of fix nvalchemi/dd snapshot_if does not exist: define it before the "
                 "run",
                 condition);
    if (!input->variable->equalstyle(variable))
      error->all(FLERR, Error::NOLASTLINE,
                 "Variable {} of fix nvalchemi/dd snapshot_if must be equal-style (a number each "
                 "step; non-zero writes the snapshot)",
                 condition);
  }

  void Snapshots::write(int groupbit, Compute *pe, const std::vector<int> &atomic_number_of_type)
  {
    // the same number on every rank: all of them gather, or none
    if (variable >= 0 && input->variable->compute_equal(variable) == 0.0) return;
    const double energy = pe->compute_scalar();
    constexpr int WIDTH = 8;    // ID, type, x, f
    std::vector<double> mine;
    for (int i = 0; i < atom->nlocal; ++i) {
      if (!(atom->mask[i] & groupbit)) continue;
      mine.push_back(static_cast<double>(atom->tag[i]));
      mine.push_back(atom->type[i]);
      for (int d = 0; d < 3; ++d) mine.push_back(atom->x[i][d] - domain->boxlo[d]);
      for (int d = 0; d < 3; ++d) mine.push_back(atom->f[i][d]);
    }
    const std::vector<double> rows = gather_by_id(mine, WIDTH, world);
    if (comm->me != 0) return;

    std::vector<FrameAtom> atoms(rows.size() / WIDTH);
    for (size_t k = 0; k < atoms.size(); ++k) {
      const double *r = &rows[k * WIDTH];
      atoms[k].id = static_cast<int64_t>(r[0]);
      atoms[k].atomic_number = atomic_number_of_type[static_cast<int>(r[1])];
      std::copy_n(r + 2, 3, atoms[k].position);
      std::copy_n(r + 5, 3, atoms[k].force);
    }
    const std::string frame = extxyz_frame(atoms, box_cell(domain), energy, update->ntimestep);
    fputs(frame.c_str(), fp);
    fflush(fp);
  }

}    // namespace NVAlchemi
}    // namespace LAMMPS_NS
