/* ----------------------------------------------------------------------
   USER-NVALCHEMI: LAMMPS' data for the LAMMPS-free units: the box, atoms and neighbor lists,
   files read once, problems found on some ranks.
------------------------------------------------------------------------- */

#include "nvalchemi_lammps_data.h"

#include "atom.h"
#include "comm.h"
#include "domain.h"
#include "error.h"
#include "neigh_list.h"
#include "neighbor.h"
#include "utils.h"

#include <cstdio>

namespace LAMMPS_NS {
namespace NVAlchemi {

  Cell box_cell(const Domain *domain)
  {
    return {{{domain->xprd, 0.0, 0.0},
             {domain->xy, domain->yprd, 0.0},
             {domain->xz, domain->yz, domain->zprd}},
            {domain->xperiodic != 0, domain->yperiodic != 0, domain->zperiodic != 0}};
  }

  AtomsView atoms_view(const Atom *atom, const int *atomic_number_of_type)
  {
    return {atom->x, atom->type, atomic_number_of_type, atom->nlocal, atom->nlocal + atom->nghost};
  }

  NeighborView neighbor_view(const NeighList *list, bool ghost_lists)
  {
    return {list->inum,       ghost_lists ? list->gnum : 0,
            list->ilist,      list->numneigh,
            list->firstneigh, NEIGHMASK,
            !ghost_lists};
  }

  bool read_and_broadcast(LAMMPS *lmp, const std::string &file, std::string &bytes)
  {
    static constexpr int CHUNK = 1 << 30;    // MPI counts are ints
    bytes.clear();
    bigint size = -1;
    if (lmp->comm->me == 0) {
      const std::string path = utils::get_potential_file_path(file);
      FILE *fp = path.empty() ? nullptr : fopen(path.c_str(), "rb");
      if (fp) {
        char buffer[1 << 16];
        size_t n;
        while ((n = fread(buffer, 1, sizeof(buffer), fp)) > 0) bytes.append(buffer, n);
        if (!ferror(fp)) size = static_cast<bigint>(bytes.size());
        fclose(fp);
      }
    }
    MPI_Bcast(&size, 1, MPI_LMP_BIGINT, 0, lmp->world);
    if (size < 0) return false;
    bytes.resize(size);
    for (bigint offset = 0; offset < size; offset += CHUNK)
      MPI_Bcast(&bytes[offset], static_cast<int>(std::min<bigint>(CHUNK, size - offset)), MPI_CHAR,
                0, lmp->world);
    return true;
  }

  void stop_on_any_rank(LAMMPS *lmp, const std::string &problem)
  {
    int failed = problem.empty() ? 0 : 1, ranks_failed = 0;
    MPI_Allreduce(&failed, &ranks_failed, 1, MPI_INT, MPI_SUM, lmp->world);
    if (ranks_failed == lmp->comm->nprocs)
      lmp->error->all(FLERR, "pair_style nvalchemi {}", problem);
    if (failed)
      lmp->error->one(FLERR, "pair_style nvalchemi {} (on rank {})", problem, lmp->comm->me);
    if (ranks_failed) MPI_Barrier(lmp->world);    // until the failed ranks' error ends the run
  }

}    // namespace NVAlchemi
}    // namespace LAMMPS_NS
