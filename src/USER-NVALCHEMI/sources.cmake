# The package's sources, in one place for the in-LAMMPS build and the plugin build.
# NVALCHEMI_TORCH_SOURCES include LibTorch headers and nothing of LAMMPS; NVALCHEMI_SOURCES
# include LAMMPS headers and nothing of LibTorch. A LibTorch unit has "runner" or "torch" in its
# name; nothing else includes LibTorch.
set(NVALCHEMI_SOURCES
  ${CMAKE_CURRENT_LIST_DIR}/compute_nvalchemi_atom.cpp
  ${CMAKE_CURRENT_LIST_DIR}/compute_nvalchemi_deviation.cpp
  ${CMAKE_CURRENT_LIST_DIR}/compute_nvalchemi_global.cpp
  ${CMAKE_CURRENT_LIST_DIR}/fix_nvalchemi_dd.cpp
  ${CMAKE_CURRENT_LIST_DIR}/pair_nvalchemi.cpp
  ${CMAKE_CURRENT_LIST_DIR}/nvalchemi_dd_features.cpp
  ${CMAKE_CURRENT_LIST_DIR}/nvalchemi_dd_hook.cpp
  ${CMAKE_CURRENT_LIST_DIR}/nvalchemi_dd_monitor.cpp
  ${CMAKE_CURRENT_LIST_DIR}/nvalchemi_dd_reference.cpp
  ${CMAKE_CURRENT_LIST_DIR}/nvalchemi_halo.cpp
  ${CMAKE_CURRENT_LIST_DIR}/nvalchemi_halo_atom_comm.cpp
  ${CMAKE_CURRENT_LIST_DIR}/nvalchemi_halo_exchange.cpp
  ${CMAKE_CURRENT_LIST_DIR}/nvalchemi_halo_graph_partition.cpp
  ${CMAKE_CURRENT_LIST_DIR}/nvalchemi_halo_row_exchange.cpp
  ${CMAKE_CURRENT_LIST_DIR}/nvalchemi_lammps_data.cpp
  ${CMAKE_CURRENT_LIST_DIR}/nvalchemi_memory.cpp
  ${CMAKE_CURRENT_LIST_DIR}/nvalchemi_model_archive.cpp
  ${CMAKE_CURRENT_LIST_DIR}/nvalchemi_model_libraries.cpp
  ${CMAKE_CURRENT_LIST_DIR}/nvalchemi_model_metadata.cpp
  ${CMAKE_CURRENT_LIST_DIR}/nvalchemi_model_units.cpp
  ${CMAKE_CURRENT_LIST_DIR}/nvalchemi_mpi_gather.cpp
  ${CMAKE_CURRENT_LIST_DIR}/nvalchemi_outputs_committee.cpp
  ${CMAKE_CURRENT_LIST_DIR}/nvalchemi_outputs_consolidate.cpp
  ${CMAKE_CURRENT_LIST_DIR}/nvalchemi_pair_device.cpp
  ${CMAKE_CURRENT_LIST_DIR}/nvalchemi_pair_halo.cpp
  ${CMAKE_CURRENT_LIST_DIR}/nvalchemi_pair_keywords.cpp
  ${CMAKE_CURRENT_LIST_DIR}/nvalchemi_pair_libraries.cpp
  ${CMAKE_CURRENT_LIST_DIR}/nvalchemi_pair_memory.cpp
  ${CMAKE_CURRENT_LIST_DIR}/nvalchemi_pair_model.cpp
  ${CMAKE_CURRENT_LIST_DIR}/nvalchemi_rank_graph.cpp
  ${CMAKE_CURRENT_LIST_DIR}/nvalchemi_rank_graph_build.cpp
  ${CMAKE_CURRENT_LIST_DIR}/nvalchemi_spec.cpp
  ${CMAKE_CURRENT_LIST_DIR}/nvalchemi_step_device.cpp
  ${CMAKE_CURRENT_LIST_DIR}/nvalchemi_step_engine.cpp)
set(NVALCHEMI_TORCH_SOURCES
  ${CMAKE_CURRENT_LIST_DIR}/nvalchemi_dd_hook_torch.cpp
  ${CMAKE_CURRENT_LIST_DIR}/nvalchemi_halo_ops_torch.cpp
  ${CMAKE_CURRENT_LIST_DIR}/nvalchemi_rank_graph_torch.cpp
  ${CMAKE_CURRENT_LIST_DIR}/nvalchemi_runner.cpp
  ${CMAKE_CURRENT_LIST_DIR}/nvalchemi_runner_aoti.cpp
  ${CMAKE_CURRENT_LIST_DIR}/nvalchemi_runner_cuda_graph.cpp
  ${CMAKE_CURRENT_LIST_DIR}/nvalchemi_runner_foreign.cpp
  ${CMAKE_CURRENT_LIST_DIR}/nvalchemi_runner_torch.cpp
  ${CMAKE_CURRENT_LIST_DIR}/nvalchemi_runner_torchscript.cpp)
# What NVALCHEMI_SOURCES link besides LAMMPS and LibTorch: zlib (nvalchemi_model_archive.cpp
# checks the CRC-32 of every entry of a model archive, deflated ones inflated).
find_package(ZLIB REQUIRED)
set(NVALCHEMI_LIBRARIES ZLIB::ZLIB)
