# LibTorch for USER-NVALCHEMI, shared by the in-LAMMPS package build and the plugin build.
#
# LibTorch is taken from the PyTorch that `NVALCHEMI_PYTHON` imports (torch.utils.cmake_prefix_path)
# unless Torch_DIR or CMAKE_PREFIX_PATH already lead to a TorchConfig.cmake. Only the package's
# own translation units that include torch headers see LibTorch's include paths and flags: they
# form an OBJECT library, and the consumer links the LibTorch shared libraries by file name, so no
# LAMMPS source is compiled with torch settings.
include_guard(GLOBAL)

function(nvalchemi_find_torch)
  if(NOT Torch_DIR)
    find_package(Torch QUIET CONFIG)
  endif()
  if(NOT Torch_FOUND)
    find_program(NVALCHEMI_PYTHON NAMES python3 python DOC "Python interpreter whose torch provides LibTorch")
    execute_process(COMMAND ${NVALCHEMI_PYTHON} -c "import torch; print(torch.utils.cmake_prefix_path)"
      OUTPUT_VARIABLE torch_prefix OUTPUT_STRIP_TRAILING_WHITESPACE RESULT_VARIABLE torch_status)
    if(NOT torch_status EQUAL 0)
      message(FATAL_ERROR "USER-NVALCHEMI needs LibTorch: '${NVALCHEMI_PYTHON} -c \"import torch\"' "
        "failed. Install PyTorch for that interpreter (pip install torch==2.13.0), set "
        "-DNVALCHEMI_PYTHON=<python with torch>, or point -DTorch_DIR at a LibTorch's share/cmake/Torch.")
    endif()
    list(APPEND CMAKE_PREFIX_PATH ${torch_prefix})
  endif()
  # TorchConfig warns about a missing kineto on CPU builds; that is harmless here.
  find_package(Torch REQUIRED CONFIG)
  message(STATUS "USER-NVALCHEMI: LibTorch ${Torch_VERSION} from ${Torch_DIR}")
  set(TORCH_LIBRARIES ${TORCH_LIBRARIES} PARENT_SCOPE)
  set(TORCH_CXX_FLAGS ${TORCH_CXX_FLAGS} PARENT_SCOPE)
endfunction()

# nvalchemi_add_torch_objects(<target> <sources>...): an OBJECT library compiled with LibTorch.
function(nvalchemi_add_torch_objects target)
  add_library(${target} OBJECT ${ARGN})
  target_link_libraries(${target} PRIVATE torch)
  # a LibTorch with CUDA: its CUDA headers (CUDA graphs: nvalchemi_runner_cuda_graph.cpp)
  if(TARGET torch_cuda)
    target_compile_definitions(${target} PRIVATE NVALCHEMI_TORCH_CUDA)
  endif()
  set_target_properties(${target} PROPERTIES POSITION_INDEPENDENT_CODE ON CXX_STANDARD 17
    CXX_STANDARD_REQUIRED ON)
  nvalchemi_torch_library_definition(${target})
endfunction()

# nvalchemi_torch_library_definition(<target>): the libtorch_cpu.so the build links, which the
# package compares at run time with the LibTorch the process has loaded (libtorch_mismatch in
# nvalchemi_runner.cpp: a Python process may have imported another torch before LAMMPS).
function(nvalchemi_torch_library_definition target)
  target_compile_definitions(${target} PRIVATE NVALCHEMI_TORCH_LIBRARY="$<TARGET_FILE:torch_cpu>")
endfunction()

# nvalchemi_link_torch(<target>): link the LibTorch shared libraries by file, without their
# include paths and compile flags (a plain `target_link_libraries(... torch)` would put those
# on every source of <target>). A CUDA LibTorch adds torch_cuda and c10_cuda, linked even though
# no symbol of theirs is referenced (--no-as-needed): loading them is what registers LibTorch's
# CUDA backend, without which it sees no GPU.
function(nvalchemi_link_torch target)
  set(libs)
  foreach(lib torch torch_cpu c10)
    if(TARGET ${lib})
      list(APPEND libs $<TARGET_FILE:${lib}>)
    endif()
  endforeach()
  set(cuda_libs)
  foreach(lib torch_cuda c10_cuda)
    if(TARGET ${lib})
      list(APPEND cuda_libs $<TARGET_FILE:${lib}>)
    endif()
  endforeach()
  if(cuda_libs)
    message(STATUS "USER-NVALCHEMI: LibTorch with CUDA (pair_style nvalchemi ... device cuda)")
    set(cuda_libs "-Wl,--no-as-needed" ${cuda_libs} "-Wl,--as-needed")
  endif()
  target_link_libraries(${target} PRIVATE ${libs} ${cuda_libs})
endfunction()
