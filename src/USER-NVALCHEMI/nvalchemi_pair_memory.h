/* -*- c++ -*- ----------------------------------------------------------
   USER-NVALCHEMI: the pair style's check that a model call will fit in host memory, made before
   the model allocates: halo deep on several ranks evaluates every layer on a ghost shell of
   L cutoffs, which on a small cell holds tens of thousands of images, and a run that needs more
   than the node has stops with a LAMMPS error that says how much, never the kernel's kill.
------------------------------------------------------------------------- */

#ifndef LMP_NVALCHEMI_PAIR_MEMORY_H
#define LMP_NVALCHEMI_PAIR_MEMORY_H

#include <cstdint>
#include <functional>
#include <mpi.h>

namespace LAMMPS_NS {
class LAMMPS;
namespace NVAlchemi {

  struct Cell;
  struct Graph;
  struct PairModel;

  // What the check keeps between neighbor list builds.
  class MemoryCheck {
   public:
    MemoryCheck() = default;
    MemoryCheck(const MemoryCheck &) = delete;
    MemoryCheck &operator=(const MemoryCheck &) = delete;
    ~MemoryCheck();

    // Collective, before a model call on `graph` (this rank's model graph): on this rank's first
    // graph with edges, the model's peak resident bytes per row and edge are measured on a
    // sample of it (sample_graph; `graph_to_host` first puts the graph's values on the host);
    // the need of every rank is then that figure times its rows and edges, summed over the
    // ranks of each node against the node's available memory (and its control group's limit),
    // and each process' against its address-space limit. Rank 0 logs the estimate when it
    // grows; a need beyond a limit stops every rank with an error naming the figures.
    // `on_host`: the model runs on the host (a rank on a GPU takes part with no need).
    void check(LAMMPS *lmp, PairModel &m, const Graph &graph, const Cell &cell, bool on_host,
               const std::function<void()> &graph_to_host);

    // Forgets the measurement (a new model), keeping the node's communicator.
    void reset();

   private:
    double bytes_per_item = -1.0;    // -1: not measured yet
    bool measurable = true;          // false where the peak cannot be reset or the sample failed
    int64_t sample_items = 0;
    double logged_need = -1.0;        // the largest need per rank rank 0 has logged
    MPI_Comm node = MPI_COMM_NULL;    // the ranks that share this rank's node

    void measure(LAMMPS *lmp, PairModel &m, const Graph &graph, const Cell &cell);
  };

}    // namespace NVAlchemi
}    // namespace LAMMPS_NS

#endif
