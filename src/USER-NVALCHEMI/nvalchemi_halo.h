/* -*- c++ -*- ----------------------------------------------------------
   USER-NVALCHEMI: the halo mode of a run as one object. It owns what the mode asks of LAMMPS
   (the neighbor list, the ghost cutoff, atom IDs), the graph the model sees and how its rows
   map back to the rank's atoms, and the exchanger the exchange ops use. The pair style asks the
   halo and never the mode's name. A new halo mode is an entry of the spec's tables
   (nvalchemi_spec_tables.h: its name and what it asks of the rank's graph, which the Python
   tools read too) and its HaloMode enumerator; a class here and a line in make_halo only when
   its model rows are not the rank's (with its exchanger in a unit of its own).
   MPI only: no LAMMPS classes, no LibTorch.
------------------------------------------------------------------------- */

#ifndef LMP_NVALCHEMI_HALO_H
#define LMP_NVALCHEMI_HALO_H

#include "nvalchemi_halo_exchange.h"
#include "nvalchemi_spec.h"

#include <functional>
#include <memory>
#include <mpi.h>

namespace LAMMPS_NS {
namespace NVAlchemi {

  struct Graph;
  struct ModelOutputs;

  class Halo {
   public:
    explicit Halo(HaloMode mode) : which(mode) {}
    virtual ~Halo() = default;
    HaloMode mode() const { return which; }

    // Ghost atoms receive edges of their own (a full neighbor list with the ghosts' lists:
    // LAMMPS' Pair::ghostneigh): every edge into an owned row is then on this rank, and a
    // multi-layer model needs no exchange between its layers. Otherwise the rank's graph comes
    // from a half list without newton (each owned pair once, each owned-ghost pair on both
    // ranks).
    virtual bool ghost_receivers() const { return halo_rules(which).ghost_receivers; }
    // Owned rows see every message they need without exchange calls between layers (halo deep's
    // ghost shell, or its images folded onto their atoms).
    virtual bool complete_without_exchange() const { return ghost_receivers(); }
    // On one rank the periodic images of halo deep's ghost shell are folded onto the atoms they
    // image: the model's rows are the cell's atoms, whose edges carry the lattice shift.
    virtual bool folds_images() const { return false; }
    // The ghost cutoff the mode needs for a model of `layers` message-passing layers, or 0
    // where LAMMPS' default (the pair cutoff plus the skin) serves.
    virtual double ghost_cutoff(double cutoff, double skin, int layers) const;
    // Ghost atoms are matched to rows by atom ID: LAMMPS must keep atom IDs.
    virtual bool maps_atoms_by_id() const { return false; }
    // The exchange calls move rows through the pair style's per-atom communication (AtomComm),
    // in passes of its communication width; otherwise in one collective per call.
    virtual bool exchanges_through_atom_comm() const { return true; }

    // The model sees a graph of the mode's own, made from the rank graph's host buffers.
    virtual bool makes_model_graph() const { return false; }
    // The graph the model sees, made from this rank's graph (`atom_id`: the atom ID of one of
    // its rows). Collective where the mode's graph spans ranks. Throws std::runtime_error.
    virtual Graph &model_graph(Graph &rank_graph,
                               const std::function<int64_t(int64_t)> & /*atom_id*/)
    { return rank_graph; }
    // The model's per-node outputs as rows of this rank's graph, which everything after the
    // model call (tallies, consolidated outputs, validation) reads. Collective where
    // model_graph is.
    virtual void to_rank_rows(const MLIPSpec &, const Graph & /*rank_graph*/, ModelOutputs &) {}

    // The exchange ops' implementation for this mode.
    MeasuredExchanger &exchanger() { return *exchange; }
    // bytes the mode holds beyond the rank's graph
    virtual double memory_bytes() const { return 0.0; }

   protected:
    std::unique_ptr<MeasuredExchanger> exchange;

   private:
    HaloMode which;
  };

  // The exchanger of the modes whose rows go through per-atom communication (local, layerwise,
  // deep), as the pair style makes it for the rank's graph and where its rows live;
  // `owned_rows_complete` as RowExchange takes it.
  using RowExchangeMaker =
      std::function<std::unique_ptr<MeasuredExchanger>(bool owned_rows_complete)>;

  // The halo of `mode` on the ranks of `world`, its row exchange made by `row_exchange`. A mode
  // with a ghost shell per layer folds its images when `world` has one rank and `atom_ids` are
  // kept (images are matched to their atoms by ID): the shell of L cutoffs, tens of thousands of
  // images of a small cell, is never evaluated.
  std::unique_ptr<Halo> make_halo(HaloMode mode, const RowExchangeMaker &row_exchange,
                                  MPI_Comm world, bool atom_ids);

}    // namespace NVAlchemi
}    // namespace LAMMPS_NS

#endif
