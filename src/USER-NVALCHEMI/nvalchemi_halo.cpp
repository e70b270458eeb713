/* ----------------------------------------------------------------------
   USER-NVALCHEMI: the halo modes (doc/Howto_nvalchemi_spec.rst).
------------------------------------------------------------------------- */

#include "nvalchemi_halo.h"

#include "nvalchemi_halo_graph_partition.h"

#include <algorithm>
#include <vector>

namespace LAMMPS_NS {
namespace NVAlchemi {

  namespace {
    // local, layerwise and deep: the model's rows are the rank's atoms, moved by per-atom
    // communication. A layerwise model refreshes its ghost rows between layers, and ghost rows
    // hold partials owed to their owners; in deep mode the ghosts within L cutoffs have edges
    // of their own, so that L layers on this rank see all the owned atoms need, and owned rows
    // of an edge sum are complete.
    class AtomHalo : public Halo {
     public:
      AtomHalo(HaloMode mode, const RowExchangeMaker &row_exchange) : Halo(mode)
      { exchange = row_exchange(halo_rules(mode).ghost_receivers); }
    };

    // gp: the model's rows are the whole system's atoms (nvalchemi_halo_graph_partition)
    class PartitionHalo : public Halo {
     public:
      PartitionHalo(HaloMode mode, MPI_Comm world) : Halo(mode)
      {
        auto owned = std::make_unique<GraphPartition>(world);
        partition = owned.get();
        exchange = std::move(owned);
      }
      bool maps_atoms_by_id() const override { return true; }
      bool exchanges_through_atom_comm() const override { return false; }
      bool makes_model_graph() const override { return true; }
      Graph &model_graph(Graph &rank_graph, const std::function<int64_t(int64_t)> &atom_id) override
      {
        row_ids.resize(rank_graph.num_rows());
        for (int64_t r = 0; r < rank_graph.num_rows(); ++r) row_ids[r] = atom_id(r);
        partition->build(rank_graph, row_ids);
        return partition->graph();
      }
      void to_rank_rows(const MLIPSpec &spec, const Graph &rank_graph,
                        ModelOutputs &outputs) override
      { partition->to_halo_rows(spec, rank_graph, outputs); }
      double memory_bytes() const override
      { return partition->memory_bytes() + static_cast<double>(row_ids.capacity()) * 8; }

     private:
      GraphPartition *partition;       // the exchanger, owned by the base
      std::vector<int64_t> row_ids;    // atom ID of each row of the rank's graph, scratch
    };

    // halo deep on one rank: gp's graph of the system's atoms, which on one rank is the cell
    // with each image's edge pointing at the atom it images (build_periodic_graph's graph), from
    // a list of one cutoff; every row is owned, so the layers need no exchange
    class FoldedHalo : public PartitionHalo {
     public:
      FoldedHalo(HaloMode mode, MPI_Comm world) : PartitionHalo(mode, world) {}
      bool ghost_receivers() const override { return false; }
      bool complete_without_exchange() const override { return true; }
      bool folds_images() const override { return true; }
      double ghost_cutoff(double, double, int) const override { return 0.0; }
    };
  }    // namespace

  double Halo::ghost_cutoff(double cutoff, double skin, int layers) const
  {
    if (!halo_rules(which).shell_per_layer) return 0.0;
    return std::max(1, layers) * cutoff + skin;
  }

  std::unique_ptr<Halo> make_halo(HaloMode mode, const RowExchangeMaker &row_exchange,
                                  MPI_Comm world, bool atom_ids)
  {
    const HaloRules &rules = halo_rules(mode);
    if (rules.system_rows) return std::make_unique<PartitionHalo>(mode, world);
    int nprocs = 1;
    MPI_Comm_size(world, &nprocs);
    if (rules.shell_per_layer && nprocs == 1 && atom_ids)
      return std::make_unique<FoldedHalo>(mode, world);
    return std::make_unique<AtomHalo>(mode, row_exchange);
  }

}    // namespace NVAlchemi
}    // namespace LAMMPS_NS
