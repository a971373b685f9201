"""Upper bounds of the austerity specs' integer keys: what the code can hold.

Seeds are stored as int64 in run files; sizes bound what is allocated (e.g. the HMC truth holds
chains x samples x d float64, 4 x 10^6 x 51 x 8 bytes = 1.6 GB at the bound); counts of draws
or sweeps stay far inside int64 and are spent against a time budget anyway.
"""

SEED_MAX = 2 ** 63 - 1          # int64: seeds are stored in the run file
CHAINS_MAX = 100_000            # chains are a batch axis: (chains, D) or (chains, d) states
MINIBATCH_MAX = 10_000_000      # minibatch of the sequential test / SGLD gradient
BLOCK_MAX = 100_000             # draws buffered per block: (chains, block, ...) arrays
HMC_SAMPLES_MAX = 1_000_000     # HMC truth: (chains, samples, d) float64 in memory
STEPS_MAX = 10 ** 12            # draws or sweeps per chain (int64-safe; a time budget anyway)
SUBSETS_MAX = 100_000           # Fig 8 subsets: (chains, M * 2^size) counts
