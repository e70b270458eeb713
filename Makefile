# USER-NVALCHEMI developer entry points (see README.md):
#   make run    set up everything, then run examples/lj on 2 MPI ranks
#   make test   set up everything, then run the whole test suite (ctest)
#   make bench  the benchmarks of bench/ (not part of make test): build/bench/results.{jsonl,md}
#   make sevenn-race  SevenNet-0 under SevenNet's own LAMMPS styles (built from the sevenn wheel's
#               sources into a copy of LAMMPS, bench/sevenn_peer_build.sh) and under this package:
#               build/bench/sevenn_race/results.{jsonl,md} (bench/sevenn_race.py; about an hour)
#   make mliap-race  MACE under MACE's own LAMMPS route, ML-IAP (pair_style mliap unified, built with
#               KOKKOS and PYTHON into a LAMMPS build of its own, bench/mliap_peer_build.sh) and
#               under this package: build/bench/mliap_race/results.{jsonl,md} (bench/mliap_race.py)
#   make soak   the soak benchmark alone (bench/soak.py): memory slope and energy drift, 2 ranks
#   make sanitize  unit tests and a 4-rank run per halo mode under ASan + UBSan (tools/sanitize.sh)
#   make fuzz   the parsers under libFuzzer for FUZZ_SECONDS each (tools/fuzz.sh)
#   make cuda-wheel-check  the set-up's path for a CUDA build of torch: configure and link the
#               plugin against it without nvcc on PATH (tools/cuda-wheel-check.sh; 2.7 GB of wheels)
#   make cuda-check  that, then every package source and the operator library's CUDA kernels
#               compiled by nvcc against that torch (tools/cuda-check.sh; no GPU needed)
#
# Variables: BUILD (build tree, default ./build), LAMMPS_DIR (a LAMMPS source tree to use
# instead of the pinned Debian source), KOKKOS_DIR (the CMake package directory of a Kokkos >= 5.1
# to use instead of the one tools/install-kokkos.sh installs), JOBS (parallel compile jobs).

MAKEFLAGS += --no-print-directory

BUILD ?= $(CURDIR)/build
LAMMPS_DIR ?= $(BUILD)/lammps-src
KOKKOS_DIR ?= $(BUILD)/kokkos/lib/x86_64-linux-gnu/cmake/Kokkos
JOBS ?= $(shell nproc)
PYTHON := $(BUILD)/venv/bin/python
LMP := $(BUILD)/lammps/lmp
# CMake arguments for a CUDA build of torch (tools/torch-cuda-toolkit.sh, run by `make deps`;
# empty for the CPU build), read when a recipe runs
TORCH_CMAKE_ARGS = $(shell cat $(BUILD)/torch-cmake-args 2>/dev/null)

# ccache keys on paths relative to the checkout, so clones at other paths share the cache
export CCACHE_BASEDIR := $(CURDIR)
export CCACHE_NOHASHDIR := 1
# OpenMPI refuses to run as root without these (CI and these machines run as root)
export OMPI_ALLOW_RUN_AS_ROOT := 1
export OMPI_ALLOW_RUN_AS_ROOT_CONFIRM := 1
export OMPI_MCA_rmaps_base_oversubscribe := 1

# KSPACE: the oracles of the Ewald and particle-mesh tests; PLUGIN: the plugin route; KOKKOS
# (OpenMP backend): pair_style nvalchemi/kk, so that one LAMMPS build serves both styles
LAMMPS_PACKAGES := USER-NVALCHEMI KSPACE PLUGIN KOKKOS

.PHONY: all deps mace-venv export-venvs lammps nvalchemi run test bench sevenn-race mliap-race soak sanitize fuzz \
  cuda-wheel-check cuda-check clean

all: nvalchemi

deps:
	@LAMMPS_DIR=$(filter-out $(BUILD)/lammps-src,$(LAMMPS_DIR)) tools/install-deps.sh $(BUILD)
	@$(if $(filter $(BUILD)/kokkos/%,$(KOKKOS_DIR)),tools/install-kokkos.sh $(BUILD))

# the model export tools with mace-torch, and with nequip, in venvs of their own (the tests need
# them; the build compiles examples/mace's model in the mace one)
mace-venv: deps
	@tools/install-export-venvs.sh $(BUILD) mace

export-venvs: mace-venv
	@tools/install-export-venvs.sh $(BUILD)

# LAMMPS with USER-NVALCHEMI built in (registered through CMAKE_PROJECT_lammps_INCLUDE) and KOKKOS
# on an external Kokkos (C++20, OpenMP), and of LAMMPS' unit tests only the force-style harness
# test_pair_style (unittest/force-styles). LAMMPS is a shared library, liblammps.so, which lmp links
# and LAMMPS' own `lammps` Python module loads: that module is installed into build/venv (LAMMPS'
# install-python target, which bundles a copy of liblammps.so), again whenever liblammps.so changes.
# A build tree configured without the newest option (BUILD_SHARED_LIBS) is configured again.
GTEST_TARBALL := $(BUILD)/downloads/googletest-debian.tar.gz
lammps: deps
	@grep -q '^BUILD_SHARED_LIBS:BOOL=on' $(BUILD)/lammps/CMakeCache.txt 2>/dev/null || \
	  cmake -S $(LAMMPS_DIR)/cmake -B $(BUILD)/lammps \
	  -DCMAKE_BUILD_TYPE=Release -DCMAKE_CXX_COMPILER_LAUNCHER=ccache -DBUILD_MPI=on \
	  -DCMAKE_CXX_STANDARD=20 -DBUILD_OMP=on -DEXTERNAL_KOKKOS=on -DKokkos_DIR=$(KOKKOS_DIR) \
	  -DBUILD_SHARED_LIBS=on -DPython_EXECUTABLE=$(PYTHON) \
	  -DCMAKE_PROJECT_lammps_INCLUDE=$(CURDIR)/cmake/USER-NVALCHEMI.cmake \
	  -DNVALCHEMI_PYTHON=$(PYTHON) $(TORCH_CMAKE_ARGS) $(foreach p,$(LAMMPS_PACKAGES),-DPKG_$(p)=on) \
	  -DENABLE_TESTING=on -DGTEST_URL=file://$(GTEST_TARBALL) \
	  -DGTEST_SHA256=$$(sha256sum $(GTEST_TARBALL) | cut -d' ' -f1)
	@cmake --build $(BUILD)/lammps -j $(JOBS) --target lmp test_pair_style
	@cmp -s $(BUILD)/lammps/liblammps.so \
	  "$$($(PYTHON) -c 'import lammps, os; print(os.path.dirname(lammps.__file__))' 2>/dev/null)/liblammps.so" || \
	  { echo "installing LAMMPS' Python module into $(BUILD)/venv"; \
	    cmake --build $(BUILD)/lammps --target install-python > $(BUILD)/lammps/install-python.log 2>&1 && \
	    cmp -s $(BUILD)/lammps/liblammps.so \
	      "$$($(PYTHON) -c 'import lammps, os; print(os.path.dirname(lammps.__file__))')/liblammps.so" || \
	    { cat $(BUILD)/lammps/install-python.log; exit 1; }; }

# the plugin, the unit tests, the reference models and the ctest suite
nvalchemi: lammps mace-venv
	@test -f $(BUILD)/nvalchemi/CMakeCache.txt || cmake -S . -B $(BUILD)/nvalchemi \
	  -DCMAKE_BUILD_TYPE=Release -DCMAKE_CXX_COMPILER_LAUNCHER=ccache \
	  -DLAMMPS_SOURCE_DIR=$(LAMMPS_DIR)/src -DLAMMPS_BINARY=$(LMP) -DNVALCHEMI_PYTHON=$(PYTHON) \
	  $(TORCH_CMAKE_ARGS)
	@cmake --build $(BUILD)/nvalchemi -j $(JOBS)

# (mace-torch installs while LAMMPS compiles)
run:
	@$(MAKE) -j2 nvalchemi
	cd examples/lj && mpirun -np 2 $(LMP) -in in.lj -log none

# the export venvs (pip: mostly downloading and unpacking) install while LAMMPS compiles
test:
	@$(MAKE) -j2 export-venvs nvalchemi
	ctest --test-dir $(BUILD)/nvalchemi --output-on-failure -j $(JOBS)

bench: nvalchemi
	$(PYTHON) bench/run.py --lmp $(LMP) --models $(BUILD)/nvalchemi/potentials --out $(BUILD)/bench \
	  --kernels $(BUILD)/nvalchemi/plugin/nvalchemi_kernels.so

sevenn-race: nvalchemi export-venvs
	bench/sevenn_peer_build.sh $(BUILD)
	$(BUILD)/venv-sevenn/bin/python bench/sevenn_race.py --lmp $(LMP) \
	  --peer-lmp $(BUILD)/sevenn-peer/build/lmp --out $(BUILD)/bench/sevenn_race

mliap-race: nvalchemi export-venvs
	bench/mliap_peer_build.sh $(BUILD)
	$(BUILD)/venv-mace/bin/python bench/mliap_race.py --lmp $(LMP) \
	  --peer-lmp $(BUILD)/mliap-peer/build/lmp --out $(BUILD)/bench/mliap_race

soak: nvalchemi
	$(PYTHON) bench/soak.py --lmp $(LMP) --models $(BUILD)/nvalchemi/potentials | tee $(BUILD)/soak.jsonl

sanitize: nvalchemi
	tools/sanitize.sh $(BUILD)

FUZZ_SECONDS ?= 60
fuzz: nvalchemi
	tools/fuzz.sh $(BUILD) $(FUZZ_SECONDS)

cuda-wheel-check: deps
	tools/cuda-wheel-check.sh $(BUILD)

cuda-check: deps
	tools/cuda-check.sh $(BUILD)

clean:
	rm -rf $(BUILD)/lammps $(BUILD)/nvalchemi
