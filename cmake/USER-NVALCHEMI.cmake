# USER-NVALCHEMI as a LAMMPS package, without changing any LAMMPS file:
#
#   cmake -S <lammps>/cmake -B build -DCMAKE_PROJECT_lammps_INCLUDE=<this file> -DPKG_USER-NVALCHEMI=on
#
# CMake runs this file right after LAMMPS' `project(lammps)`. The package's styles are registered
# now, before LAMMPS writes its style headers; its sources join the `lammps` target at the end of
# LAMMPS' CMakeLists.txt (cmake_language DEFER), once that target exists. doc/Build_nvalchemi.rst
# explains why this route was chosen over patching LAMMPS' CMakeLists.txt.
include_guard(GLOBAL)

option(PKG_USER-NVALCHEMI "Build the USER-NVALCHEMI package (pair_style nvalchemi)" OFF)
if(NOT PKG_USER-NVALCHEMI)
  return()
endif()

get_filename_component(NVALCHEMI_SOURCE_DIR ${CMAKE_CURRENT_LIST_DIR}/../src/USER-NVALCHEMI ABSOLUTE)
include(${CMAKE_CURRENT_LIST_DIR}/NVAlchemiTorch.cmake)
include(${NVALCHEMI_SOURCE_DIR}/sources.cmake)
nvalchemi_find_torch()

include(${CMAKE_CURRENT_SOURCE_DIR}/Modules/StyleHeaderUtils.cmake)
RegisterStyles(${NVALCHEMI_SOURCE_DIR})
# with the KOKKOS package, the /kk variants (pair_style nvalchemi/kk)
get_filename_component(NVALCHEMI_KOKKOS_DIR ${CMAKE_CURRENT_LIST_DIR}/../kokkos ABSOLUTE)
if(PKG_KOKKOS)
  RegisterStyles(${NVALCHEMI_KOKKOS_DIR})
endif()

function(nvalchemi_add_to_lammps)
  nvalchemi_add_torch_objects(nvalchemi_torch ${NVALCHEMI_TORCH_SOURCES})
  target_include_directories(nvalchemi_torch PRIVATE ${NVALCHEMI_SOURCE_DIR})
  target_sources(lammps PRIVATE ${NVALCHEMI_SOURCES} $<TARGET_OBJECTS:nvalchemi_torch>)
  target_include_directories(lammps PRIVATE ${NVALCHEMI_SOURCE_DIR})
  nvalchemi_link_torch(lammps)
  target_link_libraries(lammps PRIVATE ${NVALCHEMI_LIBRARIES})
  if(PKG_KOKKOS)
    target_sources(lammps PRIVATE ${NVALCHEMI_KOKKOS_DIR}/pair_nvalchemi_kokkos.cpp
      ${NVALCHEMI_KOKKOS_DIR}/nvalchemi_rank_graph_kokkos.cpp
      ${NVALCHEMI_KOKKOS_DIR}/nvalchemi_halo_row_exchange_kokkos.cpp)
    target_include_directories(lammps PRIVATE ${NVALCHEMI_KOKKOS_DIR})
    message(STATUS "USER-NVALCHEMI: pair_style nvalchemi and nvalchemi/kk built into LAMMPS")
  else()
    message(STATUS "USER-NVALCHEMI: pair_style nvalchemi built into LAMMPS")
  endif()
endfunction()
cmake_language(DEFER CALL nvalchemi_add_to_lammps)
