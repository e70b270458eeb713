/* ----------------------------------------------------------------------
   USER-NVALCHEMI: the halo mode on LAMMPS' side (nvalchemi_pair_halo.h)
------------------------------------------------------------------------- */

#include "nvalchemi_pair_halo.h"

#include "atom.h"
#include "comm.h"
#include "error.h"
#include "neighbor.h"
#include "update.h"

#include "nvalchemi_halo.h"
#include "nvalchemi_pair_model.h"

#include <algorithm>
#include <string>
#include <vector>

namespace LAMMPS_NS {
namespace NVAlchemi {

  void init_halo(LAMMPS *lmp, const PairModel &m, const Halo &halo, double cutoff,
                 double &saved_cutghostuser)
  {
    Comm *comm = lmp->comm;
    const std::string mode = to_string(halo.mode());
    if (halo.maps_atoms_by_id() && lmp->atom->tag_enable == 0)
      lmp->error->all(FLERR, Error::NOLASTLINE,
                      "Halo mode '{}' of pair style nvalchemi maps ghost atoms to their atoms' "
                      "rows by atom ID: use atom_modify id yes (the default) before the box is "
                      "defined",
                      mode);
    const int layers = *m.spec.num_message_passing_layers;
    const double skin = lmp->neighbor->skin;
    const double ghost_cutoff = halo.ghost_cutoff(cutoff, skin, layers);
    if (ghost_cutoff > 0.0) {
      if (saved_cutghostuser < 0.0) saved_cutghostuser = comm->cutghostuser;
      comm->cutghostuser = std::max(saved_cutghostuser, ghost_cutoff);
      if (comm->me == 0)
        utils::logmesg(lmp,
                       "pair_style nvalchemi: halo mode {} raises the ghost cutoff to {:.8g} "
                       "({} layers x cutoff {} + skin {})\n",
                       mode, comm->cutghostuser, std::max(1, layers), cutoff, skin);
    } else {
      if (saved_cutghostuser >= 0.0) comm->cutghostuser = saved_cutghostuser;
      saved_cutghostuser = -1.0;
    }
    if (halo.folds_images() && comm->me == 0)
      utils::logmesg(lmp,
                     "pair_style nvalchemi: halo mode {} on one rank folds periodic images onto "
                     "the atoms they image: the model sees the {} atoms of the cell, each "
                     "image's edge carrying its lattice shift, and no ghost shell of {} layers\n",
                     mode, lmp->atom->natoms, std::max(1, layers));
  }

  namespace {
    // every rank knows of the mismatch at the same call: each says where it stood
    void stop_on_mismatch(LAMMPS *lmp, const PairModel &m, const CallPoint &here)
    {
      const int nprocs = lmp->comm->nprocs;
      int64_t mine[CallPoint::WORDS];
      here.to_words(mine);
      std::vector<int64_t> all(CallPoint::WORDS * static_cast<size_t>(nprocs));
      MPI_Allgather(mine, CallPoint::WORDS, MPI_INT64_T, all.data(), CallPoint::WORDS, MPI_INT64_T,
                    lmp->world);
      std::vector<CallPoint> points(nprocs);
      for (int p = 0; p < nprocs; ++p)
        points[p] = CallPoint::from_words(&all[CallPoint::WORDS * static_cast<size_t>(p)]);
      lmp->error->all(FLERR, Error::NOLASTLINE,
                      "Model {} made different exchange calls on different ranks on step {}{}. "
                      "Every rank must make the same torch.ops.nvalchemi calls in the same order, "
                      "a rank without atoms too (with empty rows): the model's control flow around "
                      "these calls depends on the rank's data. Check the model with "
                      "nvalchemi-check",
                      m.model_file, lmp->update->ntimestep, where_ranks_stood(points));
    }

    // a model built for the deep halo, run in halo mode local or layerwise, leaves its ghost
    // rows without the messages from beyond the cutoff; every rank made the same calls, so
    // every rank decides the same
    void stop_without_refresh(LAMMPS *lmp, const PairModel &m, Halo &halo)
    {
      const int layers = *m.spec.num_message_passing_layers;
      if (halo.complete_without_exchange() || layers < 2 || halo.exchanger().refreshes > 0) return;
      lmp->error->all(FLERR, Error::NOLASTLINE,
                      "Model {} declares {} message-passing layers but made no exchange call in "
                      "halo mode '{}', which {}: its ghost atoms would miss messages from beyond "
                      "the cutoff. A model that never calls torch.ops.nvalchemi.refresh_neighbors "
                      "or scatter_to_owners needs halo mode 'deep'; a layerwise model should make "
                      "{} such calls per evaluation",
                      m.model_file, layers, to_string(halo.mode()), m.halo_origin, layers - 1);
    }

    // rows wider than a pass take several passes per call: said once, on rank 0 (every rank
    // makes the same calls)
    void report_narrow_comm(LAMMPS *lmp, const PairModel &m, Halo &halo, int comm_width,
                            bool &reported)
    {
      const int widest = halo.exchanger().widest;
      if (!halo.exchanges_through_atom_comm() || reported || widest <= comm_width) return;
      reported = true;
      if (lmp->comm->me == 0)
        lmp->error->warning(FLERR,
                            "Model {} exchanges {} values per atom but its spec declares "
                            "exchange_feature_width {}: each exchange takes {} communication "
                            "passes; set exchange_feature_width to {} in the model's spec to move "
                            "a row in one",
                            m.model_file, widest, *m.spec.exchange_feature_width,
                            (widest + comm_width - 1) / comm_width, widest);
    }
  }    // namespace

  void check_exchange_calls(LAMMPS *lmp, const PairModel &model, Halo &halo, int comm_width,
                            bool &narrow_reported)
  {
    if (halo.exchanger().mismatched()) stop_on_mismatch(lmp, model, halo.exchanger().point());
    stop_without_refresh(lmp, model, halo);
    report_narrow_comm(lmp, model, halo, comm_width, narrow_reported);
  }

}    // namespace NVAlchemi
}    // namespace LAMMPS_NS
