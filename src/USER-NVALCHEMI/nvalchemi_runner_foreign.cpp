/* ----------------------------------------------------------------------
   USER-NVALCHEMI: deployed files of other frameworks' LAMMPS styles (nvalchemi_runner_foreign.h).
   Each format's model computes its edge vectors as positions[b] - positions[a] (+ a shift) for
   an edge (a, b) and sums messages at one end: called with zero positions and the contract's
   edge vectors in the place of the shift (MACE) or as its own edge-vector input (SevenNet,
   nequip), its per-atom energies depend on the contract's edge_vectors exactly, and the runner
   differentiates the owned rows' share with respect to them. The graph is the contract's: for
   a model that sums messages at the edge's first row, the edges are turned round (receiver
   first, vectors negated).
------------------------------------------------------------------------- */

#include "nvalchemi_runner_foreign.h"

#include "nvalchemi_model_metadata.h"

#include <torch/csrc/jit/passes/inliner.h>

#include <sstream>
#include <stdexcept>

namespace LAMMPS_NS {
namespace NVAlchemi {

  namespace {
    // the contract's inputs by position (ContractInputs::NAMES)
    enum Input { POSITIONS = 0, ATOMIC_NUMBERS, NEIGHBOR_LIST, EDGE_VECTORS, CELL, PBC, N_OWNED };

    // "atomic_energies" and their sum over the owned rows
    c10::Dict<std::string, torch::Tensor> energies(const torch::Tensor &atomic,
                                                   const std::vector<torch::Tensor> &in)
    {
      const auto rows = atomic.reshape({-1});
      const auto owned = torch::arange(rows.size(0), in[N_OWNED].options()) < in[N_OWNED];
      c10::Dict<std::string, torch::Tensor> out;
      out.insert("atomic_energies", rows);
      out.insert("energy", (rows * owned.to(rows.dtype())).sum());
      return out;
    }

    // The edges turned round for a model that sums messages at an edge's first row:
    // [2, E] (receiver, sender), and the vectors from receiver to sender.
    torch::Tensor receiver_first(const std::vector<torch::Tensor> &in)
    { return in[NEIGHBOR_LIST].t().flip(0).contiguous(); }

    torch::Dtype first_parameter_dtype(const torch::jit::Module &module)
    {
      for (const auto &parameter : module.parameters()) return parameter.scalar_type();
      return torch::kFloat64;
    }

    torch::jit::Module submodule(const torch::jit::Module &module, const char *name,
                                 const char *format)
    {
      if (!module.hasattr(name) || !module.attr(name).isModule())
        throw std::runtime_error(std::string("the ") + format + " file has no submodule '" + name +
                                 "' (frozen, or written by another release): " +
                                 "export the model with the package's exporter instead");
      return module.attr(name).toModule();
    }

    // What each format keeps of what its file records: the contract's metadata and the table
    // from atomic numbers to the model's type indices.
    class RecordedFile : public ForeignModel {
     public:
      const std::string &metadata_text() const override { return metadata; }

     protected:
      // Both, for a file of `species` (atomic numbers in the model's type order); its spec is
      // exporter_spec_json(layers, deep): every layer's ghosts on the rank, as the frameworks'
      // own pair styles run them.
      void record(const std::vector<int> &species, double cutoff, torch::Dtype dtype,
                  const std::string &spec_json)
      {
        table = type_index_table(species);
        metadata = foreign_metadata(cutoff, species, dtype, spec_json);
      }
      torch::Tensor table;
      std::string metadata;
    };

    // MACE's LAMMPS file: LAMMPS_MACE around the MACE model, whose own forward (node energies,
    // no gradient) is called here.
    class MaceLammpsFile : public RecordedFile {
     public:
      explicit MaceLammpsFile(const torch::jit::Module &file) :
          mace(submodule(file, "model", name())), head(file.attr("head").toTensor())
      {
        const auto z = file.attr("atomic_numbers").toTensor().to(torch::kInt64);
        std::vector<int> species;
        for (int64_t k = 0; k < z.numel(); ++k) species.push_back(z[k].item<int>());
        num_types = z.numel();
        record(species, file.attr("r_max").toTensor().item<double>(), first_parameter_dtype(mace),
               exporter_spec_json(file.attr("num_interactions").toTensor().item<int>(),
                                  HaloMode::DEEP));
      }
      static bool recognises(const torch::jit::Module &file)
      {
        return file.type()->name() &&
            file.type()->name()->qualifiedName().find("lammps_mace.LAMMPS_MACE") !=
            std::string::npos &&
            file.hasattr("r_max") && file.hasattr("atomic_numbers") &&
            file.hasattr("num_interactions") && file.hasattr("head");
      }
      const char *name() const override { return "MACE (mace_create_lammps_model)"; }

      c10::Dict<std::string, torch::Tensor> forward(const std::vector<torch::Tensor> &in) override
      {
        const auto &vectors = in[EDGE_VECTORS];
        const int64_t rows = in[POSITIONS].size(0), edges = vectors.size(0);
        const auto real = vectors.options();
        const auto index = in[ATOMIC_NUMBERS].options();
        c10::Dict<std::string, torch::Tensor> data;
        // vectors = positions[receiver] - positions[sender] + shifts, exactly the edge vectors
        data.insert("positions", torch::zeros({rows, 3}, real));
        data.insert("shifts", vectors);
        data.insert("unit_shifts", torch::zeros({edges, 3}, real));
        data.insert("edge_index", in[NEIGHBOR_LIST].t().contiguous());
        data.insert(
            "node_attrs",
            torch::one_hot(type_indices(table, in[ATOMIC_NUMBERS]), num_types).to(vectors.dtype()));
        data.insert("cell", in[CELL].reshape({3, 3}));
        data.insert("batch", torch::zeros({rows}, index));
        data.insert("ptr", torch::tensor({int64_t(0), rows}, index));
        data.insert("weight", torch::ones({1}, real));
        data.insert("energy", torch::zeros({1}, real));
        data.insert("forces", torch::zeros({rows, 3}, real));
        data.insert("head", head.to(vectors.device()));
        // training, compute_force, compute_virials, compute_stress, compute_displacement: off
        // (a displacement would rebuild the shifts from unit_shifts and the cell)
        const auto out = mace.forward({data, false, false, false, false, false}).toGenericDict();
        return energies(out.at("node_energy").toTensor(), in);
      }

     private:
      torch::jit::Module mace;
      torch::Tensor head;
      int64_t num_types = 0;
    };

    // Number of message aggregations in a frozen module's forward: one per interaction layer.
    int count_aggregations(const torch::jit::Module &module)
    {
      auto graph = module.get_method("forward").graph()->copy();
      torch::jit::Inline(*graph);
      int count = 0;
      for (torch::jit::Node *node : graph->nodes()) {
        const std::string kind = node->kind().toQualString();
        count += kind == "aten::scatter_reduce_" || kind == "aten::scatter_add_" ||
            kind == "aten::index_add_" || kind == "aten::scatter_reduce" ||
            kind == "aten::scatter_add" || kind == "aten::index_add";
      }
      return count;
    }

    // SevenNet's `sevenn deploy` file (pair_style e3gnn): a frozen AtomGraphSequential without
    // its force module; it takes the edge vectors as an input and sums at edge_index[0].
    class SevennDeployedFile : public RecordedFile {
     public:
      SevennDeployedFile(const torch::jit::Module &file, const torch::jit::ExtraFilesMap &extra) :
          module(file)
      {
        const auto species = species_of(words(extra.at("chemical_symbols_to_index")), name(),
                                        "export it with nvalchemi-sevenn-export");
        const std::string &dtype = extra.at("dtype");
        if (dtype != "single" && dtype != "double")
          throw std::runtime_error("the SevenNet file's dtype '" + dtype +
                                   "' is neither single nor double");
        const int layers = count_aggregations(file);
        if (layers == 0)
          throw std::runtime_error("the SevenNet file's forward sums no messages: not a "
                                   "`sevenn deploy` file this package knows");
        record(species, std::stod(extra.at("cutoff")),
               dtype == "single" ? torch::kFloat32 : torch::kFloat64,
               exporter_spec_json(layers, HaloMode::DEEP));
      }
      static bool recognises(const torch::jit::ExtraFilesMap &extra)
      {
        return extra.at("model_type") == "E3_equivariant_model" &&
            !extra.at("chemical_symbols_to_index").empty() && !extra.at("cutoff").empty();
      }
      const char *name() const override { return "SevenNet (sevenn deploy)"; }

      c10::Dict<std::string, torch::Tensor> forward(const std::vector<torch::Tensor> &in) override
      {
        const auto index = in[ATOMIC_NUMBERS].options();
        c10::Dict<std::string, torch::Tensor> data;
        data.insert("x", type_indices(table, in[ATOMIC_NUMBERS]));
        data.insert("edge_index", receiver_first(in));
        data.insert("edge_vec", -in[EDGE_VECTORS]);
        data.insert("num_atoms", torch::tensor({in[POSITIONS].size(0)}, index));
        data.insert("nlocal", in[N_OWNED].reshape({1}).to(torch::kCPU));
        const auto out = module.forward({data}).toGenericDict();
        return energies(out.at("atomic_energy").toTensor(), in);
      }

     private:
      torch::jit::Module module;
    };

    // nequip-compile's TorchScript file (pair_style nequip, allegro): GraphModel around
    // ForceStressOutput around the network (model.func), called here without the gradient.
    class NequipCompiledFile : public RecordedFile {
     public:
      NequipCompiledFile(const torch::jit::Module &file, const torch::jit::ExtraFilesMap &extra) :
          network(submodule(submodule(file, "model", name()), "func", name()))
      {
        if (!extra.at("per_edge_type_cutoff").empty())
          throw std::runtime_error("the nequip file has per-edge-type cutoffs, which the package "
                                   "does not apply: export it with nvalchemi-nequip-export");
        const auto species = species_of(words(extra.at("type_names")), name(),
                                        "export it with nvalchemi-nequip-export");
        int layers = 0;
        bool allegro = false;
        for (const auto &child : network.named_children()) {
          const std::string &child_name = child.name;
          layers += child_name.size() > 8 &&
              child_name.compare(child_name.size() - 8, 8, "_convnet") == 0;
          allegro = allegro || child_name.find("allegro") != std::string::npos;
        }
        if (!allegro && layers == 0)
          throw std::runtime_error("the nequip file's network has neither convolution layers "
                                   "nor an Allegro module: export it with "
                                   "nvalchemi-nequip-export");
        // Allegro is strictly local: its atomic energies depend on the atom's own edges only
        record(species, std::stod(extra.at("r_max")), NEQUIP_IO_DTYPE,
               exporter_spec_json(allegro ? 0 : layers, HaloMode::DEEP));
      }
      static bool recognises(const torch::jit::ExtraFilesMap &extra)
      { return !extra.at("type_names").empty() && !extra.at("r_max").empty(); }
      const char *name() const override { return "nequip (nequip-compile)"; }

      c10::Dict<std::string, torch::Tensor> forward(const std::vector<torch::Tensor> &in) override
      {
        c10::Dict<std::string, torch::Tensor> data;
        data.insert("pos", torch::zeros_like(in[POSITIONS]));
        data.insert("edge_index", receiver_first(in));
        data.insert("edge_vectors", -in[EDGE_VECTORS]);
        data.insert("atom_types", type_indices(table, in[ATOMIC_NUMBERS]));
        const auto out = network.forward({data}).toGenericDict();
        return energies(out.at("atomic_energy").toTensor(), in);
      }

     private:
      torch::jit::Module network;
    };

    const std::vector<std::string> EXTRA_FILES = {
        // sevenn deploy
        "model_type", "chemical_symbols_to_index", "cutoff", "dtype",
        // nequip-compile
        "type_names", "r_max", "model_dtype", "per_edge_type_cutoff"};
  }    // namespace

  std::vector<std::string> foreign_extra_files()
  { return EXTRA_FILES; }

  std::string foreign_metadata(double cutoff, const std::vector<int> &species, torch::Dtype dtype,
                               const std::string &spec_json)
  {
    std::ostringstream json;
    json.precision(17);
    json << "{\"contract_version\": " << CONTRACT_VERSION << ", \"cutoff\": " << cutoff
         << ", \"units\": \"metal\", \"dtype\": \""
         << (dtype == torch::kFloat32 ? "float32" : "float64") << "\", \"species\": [";
    for (size_t k = 0; k < species.size(); ++k) json << (k ? ", " : "") << species[k];
    json << "], \"spec\": " << spec_json << "}";
    return json.str();
  }

  torch::Tensor type_index_table(const std::vector<int> &species)
  {
    auto table = torch::full({119}, -1, torch::kInt64);
    for (size_t k = 0; k < species.size(); ++k) table[species[k]] = static_cast<int64_t>(k);
    return table;
  }

  torch::Tensor type_indices(const torch::Tensor &table, const torch::Tensor &atomic_numbers)
  { return table.to(atomic_numbers.device()).index_select(0, atomic_numbers); }

  std::vector<std::string> words(const std::string &text)
  {
    std::istringstream stream(text);
    std::vector<std::string> out;
    for (std::string word; stream >> word;) out.push_back(word);
    return out;
  }

  std::vector<int> species_of(const std::vector<std::string> &symbols, const char *format,
                              const char *instead)
  {
    std::vector<int> species;
    for (const auto &symbol : symbols) {
      const int z = atomic_number(symbol);
      if (z == 0)
        throw std::runtime_error(std::string("the ") + format + " file names a type '" + symbol +
                                 "' that is not a chemical element; the package maps LAMMPS "
                                 "types to models by element (pair_coeff): " +
                                 instead);
      species.push_back(z);
    }
    return species;
  }

  std::unique_ptr<ForeignModel> foreign_model(const torch::jit::Module &module,
                                              const torch::jit::ExtraFilesMap &extra)
  {
    if (MaceLammpsFile::recognises(module)) return std::make_unique<MaceLammpsFile>(module);
    if (SevennDeployedFile::recognises(extra))
      return std::make_unique<SevennDeployedFile>(module, extra);
    if (NequipCompiledFile::recognises(extra))
      return std::make_unique<NequipCompiledFile>(module, extra);
    return nullptr;
  }

}    // namespace NVAlchemi
}    // namespace LAMMPS_NS
