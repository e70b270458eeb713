/* ----------------------------------------------------------------------
   USER-NVALCHEMI: a pair style's model, set up for the run.
------------------------------------------------------------------------- */

#include "nvalchemi_pair_model.h"

#include "comm.h"
#include "error.h"
#include "force.h"
#include "platform.h"
#include "update.h"
#include "utils.h"

#include "nvalchemi_lammps_data.h"
#include "nvalchemi_outputs_consolidate.h"
#include "nvalchemi_pair_device.h"
#include "nvalchemi_pair_keywords.h"
#include "nvalchemi_pair_libraries.h"

#include <algorithm>
#include <exception>
#include <stdexcept>
#include <string>

namespace LAMMPS_NS {
namespace NVAlchemi {

  namespace {
    // "2.13" of "2.13.0+cpu"
    std::string major_minor(const std::string &version)
    {
      const size_t first = version.find('.');
      return version.substr(0, first == std::string::npos ? first : version.find('.', first + 1));
    }

    // Rank 0 warns when the model was written by another PyTorch release than the LibTorch
    // LAMMPS runs: what fails or differs then is the version gap, which the message names.
    void warn_of_another_torch(LAMMPS *lmp, const char *file, const ModelMetadata &meta)
    {
      const std::string here = libtorch_version();
      if (meta.torch_version.empty() || major_minor(meta.torch_version) == major_minor(here) ||
          lmp->comm->me != 0)
        return;
      lmp->error->warning(FLERR,
                          "Model {} was written by PyTorch {}{} and this LAMMPS runs LibTorch {}: "
                          "a TorchScript model may call operators this LibTorch lacks or runs "
                          "otherwise, and an AOTInductor package is compiled for its own "
                          "PyTorch; if it fails to load or its results differ, export it again "
                          "with PyTorch {} (the python of build/venv has it)",
                          file, meta.torch_version,
                          meta.cuda_version.empty() ? "" : " (CUDA " + meta.cuda_version + ")",
                          here, here);
    }

    // A file of another framework's LAMMPS style (nvalchemi_runner_foreign.h) makes no exchange
    // calls: its answer is exact only in the halo mode and with the layers its metadata says,
    // and static shapes would pad its graph with edges it was not written for. Rank 0 says what
    // it runs and what a layerwise export would spare.
    void check_foreign_file(LAMMPS *lmp, const char *file, const std::string &format,
                            const MLIPSpec &own, const MLIPSpec &spec)
    {
      const MLIPSpec exact = own.resolved();
      if (*spec.halo != *exact.halo ||
          *spec.num_message_passing_layers != *exact.num_message_passing_layers ||
          *spec.compile.static_shapes)
        lmp->error->all(FLERR, 1,
                        "Model {} is a {} file, which runs exactly only in halo {} with {} "
                        "message-passing layers and without static shapes (the pair_style "
                        "keywords ask for halo {}, {} layers, static_shapes {}): drop those "
                        "keywords, or export the model with the package's exporter",
                        file, format, to_string(*exact.halo), *exact.num_message_passing_layers,
                        to_string(*spec.halo), *spec.num_message_passing_layers,
                        *spec.compile.static_shapes ? "yes" : "no");
      if (lmp->comm->me != 0) return;
      if (*exact.halo == HaloMode::DEEP)
        utils::logmesg(lmp,
                       "Model {} is a {} file: it runs in halo deep, on one rank on the cell's "
                       "atoms with periodic images folded, on several ranks each rank "
                       "evaluating its ghost atoms out to {} layers of the cutoff, where a "
                       "layerwise export (nvalchemi-*-export, halo layerwise) needs far less "
                       "memory and time\n",
                       file, format, *exact.num_message_passing_layers);
      else
        utils::logmesg(lmp, "Model {} is a {} file: strictly local, it runs in halo {}\n", file,
                       format, to_string(*exact.halo));
    }
  }    // namespace

  void setup_pair_model(LAMMPS *lmp, int narg, char **arg, PairModel &m)
  {
    const PairKeywords keywords = parse_pair_keywords(lmp, narg, arg);
    m.overrides = keywords.overrides;
    m.threads = keywords.threads;
    m.drives = keywords.drives;
    m.device = rank_device(lmp, keywords.device.get());
    // graph host on every device until a GPU run of bench/gpu_check.sh verifies graph device
    // there (the Build page's table of GPU features says which run verified what)
    m.graph_on_device = keywords.graph_on_device && *keywords.graph_on_device;
    check_libtorch(lmp);
    load_op_libraries(lmp, keywords.libraries);    // before the model: it may call their ops
    m.graph_optimization = keywords.jit_optimize;
    load_pair_model(lmp, arg[0], m);
    m.cuda_graph = keywords.cuda_graph;
    if (m.cuda_graph && (!m.device.is_gpu() || !*m.spec.compile.static_shapes))
      lmp->error->all(FLERR, Error::NOLASTLINE,
                      "pair_style nvalchemi cuda_graph yes captures a model's calls on a GPU at "
                      "fixed shapes: it needs device cuda and static_shapes yes (model {}: {}, "
                      "device {}, static_shapes {})",
                      m.model_file, m.model->format(), m.device.str(),
                      *m.spec.compile.static_shapes ? "yes" : "no");
  }

  void load_pair_model(LAMMPS *lmp, const char *file, PairModel &m)
  {
    std::string archive;
    if (!read_and_broadcast(lmp, file, archive))
      lmp->error->all(FLERR, 1,
                      "Cannot open pair_style nvalchemi model file {}: check the path, which is "
                      "relative to the directory LAMMPS runs in (where it is not found there, "
                      "LAMMPS looks for the file's base name, {}, in $LAMMPS_POTENTIALS)",
                      file, platform::path_basename(file));

    PairModel &s = m;    // the names of the pair style's state
    s.model_file = file;
    try {
      s.model = load_model(archive, s.device);
    } catch (std::exception &e) {
      lmp->error->all(FLERR, 1, "Cannot load {} {}", file, e.what());
    }

    const std::string &text = s.model->metadata_text();
    if (text.empty())
      lmp->error->all(FLERR, 1,
                      "Model {} has no USER-NVALCHEMI metadata ({} inside the archive) and is "
                      "none of the other frameworks' files the package reads (MACE's "
                      "mace_create_lammps_model, SevenNet's sevenn deploy, nequip-compile's "
                      "TorchScript .nequip.pth and its .nequip.pt2 for pair_style allegro): "
                      "export the model with the "
                      "package's exporter (nvalchemi-mace-export, nvalchemi-sevenn-export, "
                      "nvalchemi-nequip-export) or write it with "
                      "nvalchemi_lammps.export.save_model (the model contract of the "
                      "USER-NVALCHEMI documentation)",
                      file, METADATA_FILE);
    try {
      s.metadata = parse_metadata(text);
    } catch (std::exception &e) {
      lmp->error->all(FLERR, 1, "Model {} has invalid metadata: {}", file, e.what());
    }
    const ModelMetadata &meta = s.metadata;
    warn_of_another_torch(lmp, file, meta);

    try {
      s.spec = (meta.spec | s.overrides).resolved();
    } catch (std::invalid_argument &e) {
      lmp->error->all(FLERR, 1, "Model {} with the pair_style keywords given: {}", file, e.what());
    }
    const MLIPSpec &spec = s.spec;
    const std::string foreign = s.model->foreign_format();
    if (!foreign.empty()) check_foreign_file(lmp, file, foreign, meta.spec, spec);
    try {
      s.units = unit_conversion(meta.units, lmp->update->unit_style, spec);
    } catch (std::invalid_argument &e) {
      lmp->error->all(FLERR, 1, "Model {} {}", file, e.what());
    }
    check_operators(lmp, file, s.model->custom_operators(), *spec.custom_ops);
    // errors about the effective spec name where its fields came from
    s.halo_origin = s.overrides.halo ? "the pair_style keywords set"
                                     : fmt::format("the spec of model {} sets", file);
    try {
      s.share = energy_share(spec, lmp->comm->nprocs);
      s.model->configure({s.units, s.share, meta.dtype == "float64", s.graph_optimization});
    } catch (std::invalid_argument &e) {
      lmp->error->all(FLERR, 1, "Model {} with the pair_style keywords given: {}", file, e.what());
    }
  }

  void check_pair_settings(LAMMPS *lmp, const PairModel &m, const Pair *pair, bool shift, bool tail)
  {
    if (lmp->force->newton_pair == 0)
      lmp->error->all(
          FLERR, Error::NOLASTLINE,
          "Pair style nvalchemi requires newton pair on: ghost-atom forces are sent to "
          "their owners by reverse communication (delete newton off, which inputs written "
          "for pair_style nequip set)");
    // the model defines its own cutoff behaviour: options that would change it are refused
    if (shift)
      lmp->error->all(
          FLERR, Error::NOLASTLINE,
          "Pair style nvalchemi cannot shift its energy (pair_modify shift yes): the model "
          "defines its own cutoff behaviour; use pair_modify shift no");
    if (tail)
      lmp->error->all(
          FLERR, Error::NOLASTLINE,
          "Pair style nvalchemi has no tail correction (pair_modify tail yes): the model "
          "defines its own cutoff behaviour; use pair_modify tail no");
    if (!m.drives && lmp->force->pair == pair)
      lmp->error->all(FLERR, Error::NOLASTLINE,
                      "pair_style nvalchemi {} drive no adds nothing to the dynamics: use it as a "
                      "sub-style of pair_style hybrid/overlay beside the model that drives, as a "
                      "committee member of compute nvalchemi/deviation",
                      m.model_file);
  }

  std::vector<int> atomic_numbers_of_types(LAMMPS *lmp, const PairModel &m, int nelements,
                                           char **elements, const int *map, int ntypes)
  {
    const std::vector<int> &species = m.metadata.species;
    std::vector<int> element_z(nelements);
    for (int e = 0; e < nelements; ++e) {
      const int z = atomic_number(elements[e]);
      if (z == 0)
        lmp->error->all(FLERR,
                        "pair_coeff nvalchemi: '{}' is not a chemical element symbol (or NULL)",
                        elements[e]);
      if (std::find(species.begin(), species.end(), z) == species.end()) {
        std::string known;
        for (int s : species) known += " " + element_symbol(s);
        lmp->error->all(FLERR, "Model {} has no parameters for element {}; it knows:{}",
                        m.model_file, elements[e], known);
      }
      element_z[e] = z;
    }
    std::vector<int> z_of_type(ntypes + 1, 0);
    for (int t = 1; t <= ntypes; ++t)
      if (map[t] >= 0) z_of_type[t] = element_z[map[t]];
    return z_of_type;
  }

  void report_cuda_graph(LAMMPS *lmp, const PairModel &m, int captures_before,
                         const Graph &model_graph, bool &problem_reported)
  {
    const bigint step = lmp->update->ntimestep;
    const CudaGraphCapture &capture = m.model->cuda_graphs();
    if (capture.captures() > captures_before && lmp->comm->me == 0)
      utils::logmesg(lmp,
                     "pair_style nvalchemi: the model's call captured as a CUDA graph on step {} "
                     "({} rows, {} edges), replayed while the shapes stay\n",
                     step, model_graph.tensor_rows(), model_graph.tensor_edges());
    if (capture.problem().empty() || problem_reported) return;
    problem_reported = true;
    lmp->error->warning(FLERR,
                        "pair_style nvalchemi cuda_graph on rank {}: {}; its calls run "
                        "uncaptured from step {}",
                        lmp->comm->me, capture.problem(), step);
  }

  void log_pair_model(LAMMPS *lmp, const PairModel &m, const char *route, double cutoff)
  {
    if (lmp->comm->me != 0) return;
    const ModelMetadata &meta = m.metadata;
    std::string species;
    for (int z : meta.species) species += " " + element_symbol(z);
    utils::logmesg(lmp,
                   "pair_style nvalchemi ({}): model {} ({}), contract v{}, units {}, {}, cutoff "
                   "{}, species:{}\neffective spec:\n{}\n",
                   route, m.model_file, m.model->format(), meta.contract_version, meta.units,
                   meta.dtype, meta.cutoff, species, m.spec.to_json(2));
    if (m.units.converts())
      utils::logmesg(lmp,
                     "pair_style nvalchemi: model {} works in {} units: converted to {} (length "
                     "x{:.12g} into the model, energy x{:.12g} and forces x{:.12g} out of it, "
                     "cutoff {:.12g})\n",
                     m.model_file, meta.units, lmp->update->unit_style, m.units.length,
                     m.units.energy, m.units.force(), cutoff);
    if (m.graph_on_device)
      utils::logmesg(lmp,
                     "pair_style nvalchemi: graph device: each step's graph is built on {}, where "
                     "the model runs\n",
                     m.device.is_gpu() ? "the GPU" : "the CPU with LibTorch's operators");
  }

}    // namespace NVAlchemi
}    // namespace LAMMPS_NS
