/* -*- c++ -*- ----------------------------------------------------------
   USER-NVALCHEMI: deployed files of other frameworks' LAMMPS styles, called through the model
   contract as they are: MACE's mace_create_lammps_model output (pair_style mace), SevenNet's
   `sevenn deploy` output (pair_style e3gnn) and nequip-compile's TorchScript output (pair_style
   nequip). Each is recognised by the contents of its TorchScript archive, described by metadata
   made from what the file records, and called so that its per-atom energies are a function of
   the contract's edge_vectors, which the TorchScript runner then differentiates as for any
   model. LibTorch; included only by nvalchemi_runner_torchscript.cpp.
------------------------------------------------------------------------- */

#ifndef LMP_NVALCHEMI_RUNNER_FOREIGN_H
#define LMP_NVALCHEMI_RUNNER_FOREIGN_H

#include <torch/script.h>

#include <memory>
#include <string>
#include <vector>

namespace LAMMPS_NS {
namespace NVAlchemi {

  class ForeignModel {
   public:
    virtual ~ForeignModel() = default;
    // what the file is, for the log and errors ("MACE (mace_create_lammps_model)")
    virtual const char *name() const = 0;
    // the contract's metadata (JSON) made from what the file records: cutoff, species, dtype,
    // units metal, a spec with the file's halo mode and number of message-passing layers
    virtual const std::string &metadata_text() const = 0;
    // The model's outputs on the contract's inputs (positions ... n_owned, in their order):
    // "atomic_energies" [rows] as a function of the edge_vectors input, and "energy", their sum
    // over the owned rows (a mask of the rows below n_owned, so that padding counts nothing).
    virtual c10::Dict<std::string, torch::Tensor>
    forward(const std::vector<torch::Tensor> &contract_inputs) = 0;
  };

  // What the foreign formats share (nequip's AOTInductor packages, nvalchemi_runner_aoti.cpp,
  // too). The contract's metadata (JSON) of a file that records a cutoff, its species (atomic
  // numbers in the model's type order) and dtype, with `spec_json` as its spec; units metal (eV,
  // Angstrom), which the frameworks' LAMMPS styles assume and none of their files records.
  std::string foreign_metadata(double cutoff, const std::vector<int> &species, torch::Dtype dtype,
                               const std::string &spec_json);
  // What nequip's networks take and return, whatever their model_dtype: positions, edge
  // vectors and per-atom energies in float64 (a float32 model computes in float32 inside).
  constexpr torch::Dtype NEQUIP_IO_DTYPE = torch::kFloat64;
  // Atomic number -> the model's type index (-1: none), as a tensor to index with.
  torch::Tensor type_index_table(const std::vector<int> &species);
  // The model's type index of each row (atomic numbers indexing such a table).
  torch::Tensor type_indices(const torch::Tensor &table, const torch::Tensor &atomic_numbers);
  // The words of a space-separated list.
  std::vector<std::string> words(const std::string &text);
  // The atomic numbers of element symbols; throws naming one that is none, the file's `format`
  // and what to do `instead`.
  std::vector<int> species_of(const std::vector<std::string> &symbols, const char *format,
                              const char *instead);

  // The extra files of the archives the formats below store their metadata in, to read at load.
  std::vector<std::string> foreign_extra_files();

  // The foreign model of a loaded TorchScript module with the extra files read beside it;
  // nullptr when it is none of the known formats. Throws std::runtime_error when it is one but
  // cannot be run exactly (saying why and what to do instead).
  std::unique_ptr<ForeignModel> foreign_model(const torch::jit::Module &module,
                                              const torch::jit::ExtraFilesMap &extra);

}    // namespace NVAlchemi
}    // namespace LAMMPS_NS

#endif
