"""Export machine-learning interatomic potentials to LAMMPS' pair_style nvalchemi, and check them.

Modules: ``export`` (``save_model``, the model contract's Python side; command
``nvalchemi-export``), ``check`` (command ``nvalchemi-check``), ``mace_export`` and
``nequip_export`` (commands ``nvalchemi-mace-export``, ``nvalchemi-nequip-export``), ``ops``
(``torch.ops.nvalchemi.*`` for scripting models that call them), ``replicated_forces`` and
``periodic`` (helpers for writing models and their oracles). doc/Howto_nvalchemi_export.rst is
the guide.
"""
