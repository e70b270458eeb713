/* -*- c++ -*- ----------------------------------------------------------
   USER-NVALCHEMI: the device a rank runs its models on (pair_style
   nvalchemi ... device cpu|cuda|cuda:N), chosen in one place. Plain C++17:
   LibTorch's view of the machine comes in as a CudaRuntime.
------------------------------------------------------------------------- */

#ifndef LMP_NVALCHEMI_STEP_DEVICE_H
#define LMP_NVALCHEMI_STEP_DEVICE_H

#include <string>

namespace LAMMPS_NS {
namespace NVAlchemi {

  // What the package does differently on an accelerator is asked of its Device here, by what
  // the caller needs to know, so that another kind of accelerator is a Kind of this unit (with
  // its LibTorch name and runtime query in nvalchemi_runner_torch) and no caller tests for CUDA.
  struct Device {
    enum class Kind { CPU, CUDA };
    Kind kind = Kind::CPU;
    int index = -1;    // a GPU's ordinal; -1: not chosen yet (a bare "cuda")

    // The GPU of ordinal `ordinal` (where a Kokkos GPU execution space keeps its memory).
    static Device gpu(int ordinal) { return {Kind::CUDA, ordinal}; }
    // A device with memory apart from the host's: inputs are staged to it through pinned host
    // buffers and outputs come back in one copy, it runs no CPU kernels (a compiled program's
    // CPU instruction set does not matter), and the ranks of a node share its GPUs.
    bool is_gpu() const { return kind != Kind::CPU; }
    // The device key AOTInductor writes into a package compiled for this kind of device
    // (AOTI_DEVICE_KEY): "cpu", "cuda".
    std::string package_key() const;
    // The device index LibTorch's model loaders take: the GPU's ordinal, -1 on the CPU.
    int loader_index() const { return is_gpu() ? index : -1; }
    // "cpu", "cuda" or "cuda:N", as the keyword spells it and LibTorch reads it
    std::string str() const;
  };

  // The device keyword's value: cpu, cuda or cuda:N. Throws std::invalid_argument.
  Device parse_device(const std::string &text);

  // What LibTorch sees on this process's node.
  struct CudaRuntime {
    bool built_with_cuda = false;    // this LibTorch has CUDA support (libtorch_cuda)
    int device_count = 0;            // GPUs visible to this process
  };
  // LibTorch's answer (nvalchemi_runner_torch.cpp).
  CudaRuntime cuda_runtime();

  // This rank's device: the requested one, or, with none requested (`requested` null), cuda
  // when LibTorch sees a GPU and cpu otherwise. A bare cuda takes GPU node_rank mod the
  // visible count (ranks of a node spread over its GPUs). Throws std::invalid_argument naming
  // what is missing and what to change.
  Device choose_device(const Device *requested, const CudaRuntime &runtime, int node_rank);

}    // namespace NVAlchemi
}    // namespace LAMMPS_NS

#endif
