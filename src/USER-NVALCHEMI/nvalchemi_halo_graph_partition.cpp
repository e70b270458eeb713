/* ----------------------------------------------------------------------
   USER-NVALCHEMI: halo mode gp, the whole system's rows on every rank.
------------------------------------------------------------------------- */

#include "nvalchemi_halo_graph_partition.h"

#include "nvalchemi_mpi_gather.h"

#include "nvalchemi_outputs.h"
#include "nvalchemi_outputs_consolidate.h"
#include "nvalchemi_spec.h"

#include <algorithm>
#include <limits>
#include <stdexcept>
#include <string>

namespace LAMMPS_NS {
namespace NVAlchemi {

  namespace {
    // values gathered per owned row: position (3), atomic number, atom ID (exact in a double
    // below 2^53)
    constexpr int GATHERED = 5;
  }    // namespace

  GraphPartition::GraphPartition(MPI_Comm world) : world(world), me(0), nprocs(1)
  {
    MPI_Comm_rank(world, &me);
    MPI_Comm_size(world, &nprocs);
    counts.resize(nprocs);
    firsts.resize(nprocs);
  }

  // MPI counts of `width` values per row; refuses a layout beyond MPI's int counts
  void GraphPartition::scale_layout(int width)
  {
    if (total * width > std::numeric_limits<int>::max())
      throw std::runtime_error("halo mode gp: " + std::to_string(total) + " rows of " +
                               std::to_string(width) +
                               " values exceed one MPI message; use halo mode layerwise");
    scaled_counts.resize(nprocs);
    scaled_firsts.resize(nprocs);
    for (int p = 0; p < nprocs; ++p) {
      scaled_counts[p] = counts[p] * width;
      scaled_firsts[p] = firsts[p] * width;
    }
    gathered.resize(static_cast<size_t>(total) * width);
  }

  void GraphPartition::build(const Graph &halo, const std::vector<int64_t> &row_tags)
  {
    const int owned = halo.n_owned;
    MPI_Allgather(&owned, 1, MPI_INT, counts.data(), 1, MPI_INT, world);
    total = 0;
    for (int p = 0; p < nprocs; ++p) {
      firsts[p] = static_cast<int>(total);
      total += counts[p];
    }
    scale_layout(GATHERED);
    std::vector<double> mine(static_cast<size_t>(owned) * GATHERED);
    for (int r = 0; r < owned; ++r) {
      std::copy_n(&halo.positions[3 * r], 3, &mine[GATHERED * r]);
      mine[GATHERED * r + 3] = static_cast<double>(halo.atomic_numbers[r]);
      mine[GATHERED * r + 4] = static_cast<double>(row_tags[r]);
    }
    MPI_Allgatherv(mine.data(), scaled_counts[me], MPI_DOUBLE, gathered.data(),
                   scaled_counts.data(), scaled_firsts.data(), MPI_DOUBLE, world);

    int64_t max_tag = 0;
    for (int64_t g = 0; g < total; ++g)
      max_tag = std::max(max_tag, static_cast<int64_t>(gathered[GATHERED * g + 4]));
    global_row.assign(max_tag + 1, -1);
    for (int64_t g = 0; g < total; ++g)
      global_row[static_cast<int64_t>(gathered[GATHERED * g + 4])] = g;

    whole.n_owned = owned;
    whole.padding_rows = whole.padding_edges = 0;
    whole.row_atom.assign(total, -1);
    std::copy_n(halo.row_atom.begin(), owned, whole.row_atom.begin());
    whole.positions.resize(3 * total);
    whole.atomic_numbers.resize(total);
    for (int64_t r = 0; r < total; ++r) {
      const double *values = &gathered[GATHERED * global_index(r)];
      std::copy_n(values, 3, &whole.positions[3 * r]);
      whole.atomic_numbers[r] = static_cast<int64_t>(values[3]);
    }

    const int64_t rotation = total - firsts[me];
    halo_row.resize(halo.num_rows());
    for (int64_t r = 0; r < halo.num_rows(); ++r) {
      const int64_t tag = row_tags[r];
      const int64_t g = tag >= 0 && tag <= max_tag ? global_row[tag] : -1;
      if (g < 0)
        throw std::runtime_error("halo mode gp: atom ID " + std::to_string(tag) +
                                 " of a ghost atom is owned by no rank");
      halo_row[r] = r < owned ? r : (g + rotation) % total;
    }
    const int64_t edges = halo.num_edges();
    whole.edges.resize(2 * edges);
    for (int64_t e = 0; e < 2 * edges; ++e) whole.edges[e] = halo_row[halo.edges[e]];
    whole.edge_vectors.assign(halo.edge_vectors.begin(), halo.edge_vectors.begin() + 3 * edges);
  }

  double GraphPartition::memory_bytes() const
  {
    return whole.memory_bytes() + static_cast<double>(gathered.capacity()) * sizeof(double) +
        static_cast<double>(halo_row.capacity() + global_row.capacity()) * sizeof(int64_t);
  }

  void GraphPartition::refresh(double *rows, int width)
  {
    Timed timed(*this);
    widest = std::max(widest, width);
    ++refreshes;
    scale_layout(width);
    MPI_Allgatherv(rows, scaled_counts[me], MPI_DOUBLE, gathered.data(), scaled_counts.data(),
                   scaled_firsts.data(), MPI_DOUBLE, world);
    for (int64_t r = whole.n_owned; r < total; ++r)
      std::copy_n(&gathered[global_index(r) * width], width, rows + r * width);
  }

  void GraphPartition::sum_into_owners(double *rows, int width, Wire)
  {
    Timed timed(*this);
    widest = std::max(widest, width);
    scale_layout(width);
    for (int64_t r = 0; r < total; ++r)
      std::copy_n(rows + r * width, width, &gathered[global_index(r) * width]);
    MPI_Reduce_scatter(gathered.data(), rows, scaled_counts.data(), MPI_DOUBLE, MPI_SUM, world);
  }

  void GraphPartition::sum_over_ranks(double *values, int n)
  {
    Timed timed(*this);
    MPI_Allreduce(MPI_IN_PLACE, values, n, MPI_DOUBLE, MPI_SUM, world);
  }

  void GraphPartition::range_over_ranks(const int64_t *values, int64_t *lowest, int64_t *highest,
                                        int n)
  {
    Timed timed(*this);
    mpi_range(world, values, lowest, highest, n);
  }

  void GraphPartition::to_halo_rows(const MLIPSpec &spec, const Graph &halo, ModelOutputs &outputs)
  {
    std::vector<double> rows;
    for (const auto &entry : spec.outputs) {
      if (entry.second.kind != OutputKind::PER_NODE) continue;
      auto found = outputs.tensors.find(entry.first);
      // the runner returns the real rows (padding dropped)
      const bool fits = found != outputs.tensors.end() && !found->second.shape.empty() &&
          found->second.shape[0] == total;
      const int64_t width = fits ? static_cast<int64_t>(found->second.values.size()) / total : 0;
      if (sums_ghost_rows(entry.second)) {
        // collective: a rank without the output takes part with zeros of the widest width
        int64_t common = width;
        MPI_Allreduce(MPI_IN_PLACE, &common, 1, MPI_INT64_T, MPI_MAX, world);
        if (common == 0) continue;
        rows.assign(static_cast<size_t>(total) * common, 0.0);
        if (fits && width == common)
          std::copy(found->second.values.begin(), found->second.values.end(), rows.begin());
        sum_into_owners(rows.data(), static_cast<int>(common), Wire::FLOAT64);
        if (!fits || width != common) continue;
      } else if (fits) {
        rows = found->second.values;
      }
      if (!fits) continue;
      // a partial's ghost rows stay zero: the owners hold the whole sums
      const int64_t copied = sums_ghost_rows(entry.second) ? halo.n_owned : halo.num_rows();
      std::vector<double> values(static_cast<size_t>(halo.num_rows()) * width, 0.0);
      for (int64_t r = 0; r < copied; ++r)
        std::copy_n(&rows[halo_row[r] * width], width, &values[r * width]);
      found->second.values.swap(values);
      found->second.shape[0] = halo.num_rows();
    }
  }

}    // namespace NVAlchemi
}    // namespace LAMMPS_NS
