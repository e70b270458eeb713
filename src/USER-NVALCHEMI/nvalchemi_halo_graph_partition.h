/* -*- c++ -*- ----------------------------------------------------------
   USER-NVALCHEMI: halo mode gp (graph partition, the toolkit's GRAPH_PARTITION strategy).
   The model's rows are every atom of the system, this rank's owned atoms first; each rank keeps
   the edges whose receiver it owns, whose senders are the rows of the atoms themselves (not of
   periodic-image ghosts); refresh_neighbors is an all-gather of the owned rows and its adjoint a
   reduce-scatter. No LAMMPS classes, no LibTorch; MPI.
------------------------------------------------------------------------- */

#ifndef LMP_NVALCHEMI_HALO_GRAPH_PARTITION_H
#define LMP_NVALCHEMI_HALO_GRAPH_PARTITION_H

#include "nvalchemi_halo_exchange.h"
#include "nvalchemi_rank_graph_build.h"

#include <mpi.h>
#include <vector>

namespace LAMMPS_NS {
namespace NVAlchemi {

  struct MLIPSpec;
  struct ModelOutputs;

  class GraphPartition : public MeasuredExchanger {
   public:
    explicit GraphPartition(MPI_Comm world);

    // Collective. Builds graph() from this rank's halo graph (owned rows, ghost rows, edges of
    // owned receivers) and `row_tags`, the atom ID of each of its rows: the owned rows of every
    // rank are gathered (positions, atomic numbers, IDs) and each ghost sender becomes the row
    // of its atom. Edges keep their order and edge vectors (which carry the image shift).
    // Throws std::runtime_error when a ghost's atom is owned by no rank.
    void build(const Graph &halo, const std::vector<int64_t> &row_tags);

    // the model's input graph (pad it for static shapes: its padding rows are never exchanged)
    Graph &graph() { return whole; }

    // Collective. The per-node outputs the spec declares, turned from rows of graph() into rows
    // of the halo graph: partials (sums_ghost_rows) summed into their owners' rows, the ghost
    // rows then zero; other values copied, a ghost row taking its atom's row. Outputs hold the
    // real rows (the runner drops padding). An output missing or of another row count on this
    // rank is left as it is (the consolidation reports it).
    void to_halo_rows(const MLIPSpec &spec, const Graph &halo, ModelOutputs &outputs);

    // bytes held: the whole system's graph and the scratch of the collectives
    double memory_bytes() const;

    int64_t num_rows() const override { return whole.tensor_rows(); }
    int64_t num_owned() const override { return whole.n_owned; }
    void refresh(double *rows, int width) override;
    // a reduce-scatter in float64 whatever `wire` says: MPI would sum float32 values in float32
    void sum_into_owners(double *rows, int width, Wire wire) override;
    void sum_over_ranks(double *values, int n) override;
    void range_over_ranks(const int64_t *values, int64_t *lowest, int64_t *highest, int n) override;

   private:
    MPI_Comm world;
    int me, nprocs;
    int64_t total = 0;                  // rows of the whole system
    std::vector<int> counts, firsts;    // owned rows of each rank, its first global index
    Graph whole;
    std::vector<int64_t> halo_row;      // graph() row of each halo row
    std::vector<int64_t> global_row;    // index by atom ID: global index (rank order), or -1
    std::vector<double> gathered;       // [total][width] scratch, rank order
    std::vector<int> scaled_counts, scaled_firsts;

    // global index (rank order) of row r of graph(): a rotation that puts this rank first
    int64_t global_index(int64_t r) const { return (r + firsts[me]) % total; }
    void scale_layout(int width);
  };

}    // namespace NVAlchemi
}    // namespace LAMMPS_NS

#endif
