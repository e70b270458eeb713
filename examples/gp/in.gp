# Halo mode gp (graph partition, preset SPEC_MPNN_GP) with the layerwise message-passing model of
# examples/mp: no ghost atom is computed on. Every rank gathers the positions of the whole
# system, keeps the edges whose receiver it owns (their senders are the atoms themselves, not
# periodic-image ghosts), and refresh_neighbors becomes an all-gather of the owned atoms'
# features (its backward a reduce-scatter). The same model file runs under halo and gp: remove
# 'spec SPEC_MPNN_GP' (halo mode layerwise) and the thermo is the same. The preset also turns on
# static shapes (the log reports the capacities).
# Run:  mpirun -np 4 lmp -in in.gp   (the logs here are from 1 and 4 ranks)

units           lj
atom_style      atomic

lattice         fcc 0.8442
region          box block 0 6 0 6 0 6
create_box      1 box
create_atoms    1 box
mass            1 1.0
velocity        all create 1.5 87287 loop geom

pair_style      hybrid/overlay nvalchemi ../../potentials/schnet_layerwise.pt2 spec SPEC_MPNN_GP &
                lj/cut 2.5
pair_coeff      * * nvalchemi Ar
pair_coeff      * * lj/cut 1.0 1.0

neighbor        0.3 bin
fix             1 all nve

thermo          10
run             50
