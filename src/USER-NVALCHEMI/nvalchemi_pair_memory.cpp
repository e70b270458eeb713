/* ----------------------------------------------------------------------
   USER-NVALCHEMI: the memory a model call will need, checked before it runs.
------------------------------------------------------------------------- */

#include "nvalchemi_pair_memory.h"

#include "comm.h"
#include "error.h"
#include "update.h"
#include "utils.h"

#include "nvalchemi_halo_exchange.h"
#include "nvalchemi_memory.h"
#include "nvalchemi_outputs.h"
#include "nvalchemi_pair_model.h"
#include "nvalchemi_rank_graph_build.h"
#include "nvalchemi_runner.h"

#include <algorithm>
#include <exception>

namespace LAMMPS_NS {
namespace NVAlchemi {

  namespace {
    // edges of the sample the model's bytes per row and edge are measured on: large enough that
    // the first call's fixed costs weigh little, small enough to cost a fraction of a step
    constexpr int64_t SAMPLE_EDGES = 4096;
    constexpr int64_t WARM_UP_EDGES = 16;
    // the estimate is logged again when it grows by this factor
    constexpr double RELOG_GROWTH = 1.25;

    enum Limit { NONE = 0, ADDRESS_SPACE = 1, NODE = 2, CGROUP = 3 };
    const char *limit_name(int limit)
    {
      switch (limit) {
        case ADDRESS_SPACE:
          return "the process' address-space limit (ulimit -v)";
        case NODE:
          return "the node's available memory (MemAvailable), shared by its ranks";
        case CGROUP:
          return "the control group's memory limit (memory.max), shared by its ranks";
        default:
          return "no limit";
      }
    }

    // one rank's figures, reduced to the rank nearest to (or furthest past) its limit
    struct RankNeed {
      double ratio = 0.0;    // need over what its tightest limit leaves; 0 where none is known
      double need = 0.0, node_need = 0.0, available = 0.0;
      double rows = 0.0, edges = 0.0, limit = NONE;
      static constexpr int WORDS = 7;
    };
  }    // namespace

  MemoryCheck::~MemoryCheck()
  {
    int finalized = 0;
    MPI_Finalized(&finalized);
    if (node != MPI_COMM_NULL && !finalized) MPI_Comm_free(&node);
  }

  void MemoryCheck::measure(LAMMPS *lmp, PairModel &m, const Graph &graph, const Cell &cell)
  {
    Graph sample;
    bytes_per_item = 0.0;
    try {
      // a first call on a few edges pays what a model's first call allocates once (the
      // executor's plans, thread pools), so that the measured call counts what grows with it
      sample_graph(graph, WARM_UP_EDGES, sample);
      SingleProcessExchange warm_up(sample.num_rows());
      ModelOutputs discarded;
      m.model->evaluate(sample, cell, m.share, &warm_up, discarded);

      sample_graph(graph, SAMPLE_EDGES, sample);
      sample_items = sample.num_rows() + sample.num_edges();
      SingleProcessExchange exchange(sample.num_rows());
      ModelOutputs outputs;
      const double before = resident_bytes();
      measurable = before >= 0.0 && reset_peak_resident();
      if (!measurable) return;
      m.model->evaluate(sample, cell, m.share, &exchange, outputs);
      bytes_per_item = std::max(0.0, peak_resident_bytes() - before) / sample_items;
    } catch (std::exception &e) {
      // the real call reports what fails; without a figure the check cannot estimate
      lmp->error->warning(FLERR,
                          "pair_style nvalchemi: model {} failed on a sample of {} edges "
                          "for its memory estimate: {}",
                          m.model_file, sample.num_edges(), e.what());
      measurable = false;
    }
  }

  void MemoryCheck::reset()
  {
    bytes_per_item = -1.0;
    measurable = true;
    sample_items = 0;
    logged_need = -1.0;
  }

  void MemoryCheck::check(LAMMPS *lmp, PairModel &m, const Graph &graph, const Cell &cell,
                          bool on_host, const std::function<void()> &graph_to_host)
  {
    MPI_Comm world = lmp->world;
    if (node == MPI_COMM_NULL)
      MPI_Comm_split_type(world, MPI_COMM_TYPE_SHARED, 0, MPI_INFO_NULL, &node);
    const int64_t items = on_host ? graph.num_rows() + graph.num_edges() : 0;
    if (bytes_per_item < 0.0 && items > 0 && graph.num_edges() > 0) {
      graph_to_host();
      measure(lmp, m, graph, cell);
    }

    RankNeed mine;
    mine.rows = on_host ? static_cast<double>(graph.num_rows()) : 0.0;
    mine.edges = on_host ? static_cast<double>(graph.num_edges()) : 0.0;
    mine.need = std::max(0.0, bytes_per_item) * static_cast<double>(items);
    MPI_Allreduce(&mine.need, &mine.node_need, 1, MPI_DOUBLE, MPI_SUM, node);
    const HostMemory memory = host_memory();
    auto against = [&](double need, double left, int limit) {
      if (left < 0.0) return;
      const double ratio = left > 0.0 ? need / left : (need > 0.0 ? 1e300 : 0.0);
      if (ratio > mine.ratio || mine.limit == NONE) {
        mine.ratio = ratio;
        mine.available = left;
        mine.limit = limit;
      }
    };
    against(mine.need, memory.address_space_left, ADDRESS_SPACE);
    against(mine.node_need, memory.node_available, NODE);
    against(mine.node_need, memory.cgroup_available, CGROUP);

    // the rank nearest to its limit, and whether every rank could measure
    struct {
      double value;
      int rank;
    } local{mine.ratio, lmp->comm->me}, worst{};
    MPI_Allreduce(&local, &worst, 1, MPI_DOUBLE_INT, MPI_MAXLOC, world);
    double words[RankNeed::WORDS] = {mine.ratio, mine.need,  mine.node_need, mine.available,
                                     mine.rows,  mine.edges, mine.limit};
    MPI_Bcast(words, RankNeed::WORDS, MPI_DOUBLE, worst.rank, world);
    const RankNeed w{words[0], words[1], words[2], words[3], words[4], words[5], words[6]};
    double most_need = mine.need;
    MPI_Allreduce(MPI_IN_PLACE, &most_need, 1, MPI_DOUBLE, MPI_MAX, world);
    double measured = measurable ? 1.0 : 0.0;
    MPI_Allreduce(MPI_IN_PLACE, &measured, 1, MPI_DOUBLE, MPI_MIN, world);

    const int layers = *m.spec.num_message_passing_layers;
    if (lmp->comm->me == 0 && most_need > RELOG_GROWTH * logged_need) {
      logged_need = most_need;
      if (measured == 0.0)
        utils::logmesg(lmp,
                       "pair_style nvalchemi: halo deep: the model's memory could not be measured "
                       "on some rank (no /proc/self/clear_refs), so its need is not checked\n");
      utils::logmesg(lmp,
                     "pair_style nvalchemi: halo deep on {} ranks, {} layers: up to {} rows and "
                     "{} edges per rank; the model needs about {} per rank (measured on a "
                     "sample of {} rows and edges: {:.0f} bytes each); rank {}: {} on its node, "
                     "{} left under {}\n",
                     lmp->comm->nprocs, layers, static_cast<int64_t>(w.rows),
                     static_cast<int64_t>(w.edges), format_bytes(most_need), sample_items,
                     bytes_per_item, worst.rank, format_bytes(w.node_need),
                     format_bytes(w.available), limit_name(static_cast<int>(w.limit)));
    }
    if (!(w.ratio > 1.0)) return;
    lmp->error->all(FLERR, Error::NOLASTLINE,
                    "pair_style nvalchemi: model {} in halo deep on {} ranks needs about {} on "
                    "rank {} on step {} ({} rows and {} edges: each of its {} layers evaluated "
                    "on a ghost shell of {} cutoffs), {} on its node, more than the {} left "
                    "under {}. Run on fewer ranks (on one rank halo deep folds periodic images "
                    "onto the cell's atoms and needs the cell's memory only) or spread the ranks "
                    "over more nodes, or export the model with halo layerwise "
                    "(nvalchemi-*-export --halo layerwise), whose ghosts reach one cutoff",
                    m.model_file, lmp->comm->nprocs, format_bytes(w.need), worst.rank,
                    lmp->update->ntimestep, static_cast<int64_t>(w.rows),
                    static_cast<int64_t>(w.edges), layers, layers, format_bytes(w.node_need),
                    format_bytes(w.available), limit_name(static_cast<int>(w.limit)));
  }

}    // namespace NVAlchemi
}    // namespace LAMMPS_NS
