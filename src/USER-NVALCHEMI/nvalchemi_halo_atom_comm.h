/* -*- c++ -*- ----------------------------------------------------------
   USER-NVALCHEMI: the exchange ops' per-atom communication (AtomComm) done with LAMMPS'
   forward and reverse communication of a pair style, in passes of at most the style's
   comm_forward / comm_reverse columns. The pair style's pack/unpack_*_comm call the
   pack/unpack functions here.
------------------------------------------------------------------------- */

#ifndef LMP_NVALCHEMI_HALO_ATOM_COMM_H
#define LMP_NVALCHEMI_HALO_ATOM_COMM_H

#include "nvalchemi_halo_row_exchange.h"

#include <functional>

namespace LAMMPS_NS {
class LAMMPS;
class Pair;

namespace NVAlchemi {

  class PairAtomComm : public AtomComm {
   public:
    PairAtomComm(LAMMPS *lmp, Pair *pair) : lmp(lmp), pair(pair) {}
    int num_atoms() const override;
    void forward(double *values, int width) override;
    void reverse(double *values, int width, Wire wire) override;
    void sum_over_ranks(double *values, int n) override;
    void broadcast(double *values, int n) override;
    void range_over_ranks(const int64_t *values, int64_t *lowest, int64_t *highest, int n) override;

    // the pass in progress, for the pair style's pack/unpack_*_comm
    int pack_forward(int n, const int *list, double *buf) const;
    void unpack_forward(int n, int first, const double *buf);
    int pack_reverse(int n, int first, double *buf) const;
    void unpack_reverse(int n, const int *list, const double *buf);

   private:
    LAMMPS *lmp;
    Pair *pair;
    double *values = nullptr;                  // [num_atoms][width] of the call in progress
    int width = 0, offset = 0, columns = 0;    // the pass: columns [offset, offset + columns)
    Wire wire = Wire::FLOAT64;                 // what the reverse pass in progress sends
    // `pass` moves columns [offset, offset + columns) of `v` [num_atoms][w], per_pass at a time
    void in_passes(double *v, int w, int per_pass, const std::function<void()> &pass);
  };

}    // namespace NVAlchemi
}    // namespace LAMMPS_NS

#endif
