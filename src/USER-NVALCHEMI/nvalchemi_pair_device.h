/* -*- c++ -*- ----------------------------------------------------------
   USER-NVALCHEMI: the device a rank of pair_style nvalchemi runs its model on: choose_device
   (nvalchemi_step_device) with the rank's place on its node, said in the log.
------------------------------------------------------------------------- */

#ifndef LMP_NVALCHEMI_PAIR_DEVICE_H
#define LMP_NVALCHEMI_PAIR_DEVICE_H

#include "nvalchemi_step_device.h"

namespace LAMMPS_NS {
class LAMMPS;
namespace NVAlchemi {

  // The device this rank runs pair_style nvalchemi's model on (choose_device, with the rank's
  // place among the ranks of its node; `requested` null: none), said in rank 0's log; an
  // impossible request is an error on every rank. Collective.
  Device rank_device(LAMMPS *lmp, const Device *requested);

}    // namespace NVAlchemi
}    // namespace LAMMPS_NS

#endif
