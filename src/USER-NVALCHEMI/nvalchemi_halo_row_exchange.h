/* -*- c++ -*- ----------------------------------------------------------
   USER-NVALCHEMI: the exchange ops' rows (torch.ops.nvalchemi.*) served by per-atom
   communication. Rows are the graph's atoms; atoms of NULL types are not rows, so rows go
   through a per-atom buffer that LAMMPS' forward and reverse communication move.
   Plain C++17: no LAMMPS classes, no LibTorch.
------------------------------------------------------------------------- */

#ifndef LMP_NVALCHEMI_HALO_ROW_EXCHANGE_H
#define LMP_NVALCHEMI_HALO_ROW_EXCHANGE_H

#include "nvalchemi_halo_exchange.h"
#include "nvalchemi_rank_graph_build.h"

#include <cstdint>
#include <vector>

namespace LAMMPS_NS {
namespace NVAlchemi {

  // Communication of per-atom arrays [num_atoms()][width] (owned atoms, then ghosts), row-major.
  // Every call is collective. The pair style implements it with LAMMPS' comm.
  class AtomComm {
   public:
    virtual ~AtomComm() = default;
    virtual int num_atoms() const = 0;
    // ghost atoms take the values of their owners
    virtual void forward(double *values, int width) = 0;
    // ghost atoms' values are added into their owners, sent as `wire`
    virtual void reverse(double *values, int width, Wire wire) = 0;
    // element-wise sum over all ranks, in place
    virtual void sum_over_ranks(double *values, int n) = 0;
    // the first rank's values on every rank, in place
    virtual void broadcast(double *values, int n) = 0;
    // element-wise minimum and maximum over all ranks
    virtual void range_over_ranks(const int64_t *values, int64_t *lowest, int64_t *highest,
                                  int n) = 0;
  };

  // The protocol of the exchange over per-atom communication: a refresh places the owned rows
  // at their atoms, LAMMPS' forward communication gives the ghost atoms their owners' values,
  // the ghost rows take them; a sum places every row, reverse communication adds the ghost
  // atoms' values into their owners, the owned rows take them. Rows and per-atom values are in
  // host memory here; a variant whose rows live elsewhere (pair_style nvalchemi/kk) overrides
  // the two copies only.
  class RowExchange : public MeasuredExchanger {
   public:
    // owned_rows_complete: the graph has edges for ghost receivers too (halo mode deep)
    RowExchange(const Graph &graph, AtomComm &comm, bool owned_rows_complete) :
        graph(graph), comm(comm), complete(owned_rows_complete)
    {
    }
    int64_t num_rows() const override { return graph.tensor_rows(); }
    int64_t num_owned() const override { return graph.n_owned; }
    void refresh(double *rows, int width) override;
    void sum_into_owners(double *rows, int width, Wire wire) override;
    void sum_over_ranks(double *values, int n) override;
    void range_over_ranks(const int64_t *values, int64_t *lowest, int64_t *highest, int n) override;
    bool owned_rows_complete() const override { return complete; }

   protected:
    const Graph &graph;
    AtomComm &comm;
    // Rows [0, nrows) at their atoms in per-atom values [comm.num_atoms()][width], zero for
    // the other atoms; returns those values in host memory, where the AtomComm moves them.
    virtual double *rows_to_atoms(const double *rows, int64_t nrows, int width);
    // Rows [first, last) take their atoms' values, as the AtomComm left them.
    virtual void atoms_to_rows(double *rows, int64_t first, int64_t last, int width);

   private:
    bool complete;
    std::vector<double> atom_values;    // [num_atoms][width] scratch
  };

}    // namespace NVAlchemi
}    // namespace LAMMPS_NS

#endif
