//! A small deterministic PRNG (SplitMix64). Same seed → same sequence on every platform;
//! no `rand` dependency, no global state.

/// SplitMix64 (Steele, Lea, Flood 2014): 64 bits of state, passes BigCrush, fast.
#[derive(Debug, Clone)]
pub struct Prng {
    state: u64,
}

const GOLDEN: u64 = 0x9E37_79B9_7F4A_7C15;

/// One SplitMix64 output step of `x`: a good 64-bit mixing function on its own.
pub fn mix64(mut z: u64) -> u64 {
    z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
    z ^ (z >> 31)
}

impl Prng {
    pub fn new(seed: u64) -> Prng {
        Prng { state: seed }
    }

    /// An independent stream for `purpose`, derived from `seed`.
    pub fn derived(seed: u64, purpose: u64) -> Prng {
        Prng::new(mix64(seed ^ mix64(purpose.wrapping_add(GOLDEN))))
    }

    pub fn next_u64(&mut self) -> u64 {
        self.state = self.state.wrapping_add(GOLDEN);
        mix64(self.state)
    }

    /// Uniform in `0..n` (`n > 0`), by Lemire's multiply-shift (bias < 2^-32 for our n).
    pub fn below(&mut self, n: u64) -> u64 {
        debug_assert!(n > 0);
        ((u128::from(self.next_u64()) * u128::from(n)) >> 64) as u64
    }

    /// Uniform index into a slice of length `n` (`n > 0`).
    pub fn index(&mut self, n: usize) -> usize {
        self.below(n as u64) as usize
    }

    /// Uniform in `lo..=hi`.
    pub fn range(&mut self, lo: u64, hi: u64) -> u64 {
        lo + self.below(hi - lo + 1)
    }

    /// Uniform in `[0, 1)`, 53 bits.
    pub fn unit(&mut self) -> f64 {
        (self.next_u64() >> 11) as f64 * (1.0 / (1u64 << 53) as f64)
    }

    /// True with probability `p`.
    pub fn chance(&mut self, p: f64) -> bool {
        self.unit() < p
    }

    pub fn pick<'a, T>(&mut self, items: &'a [T]) -> &'a T {
        &items[self.index(items.len())]
    }

    /// A copy of a uniformly chosen item.
    pub fn one_of<T: Copy>(&mut self, items: &[T]) -> T {
        items[self.index(items.len())]
    }

    /// An exponentially distributed value with the given mean.
    pub fn exponential(&mut self, mean: f64) -> f64 {
        -mean * (1.0 - self.unit()).ln()
    }

    /// A log-normal value: `exp(N(mu, sigma))` (Box–Muller).
    pub fn log_normal(&mut self, mu: f64, sigma: f64) -> f64 {
        let u1 = 1.0 - self.unit();
        let u2 = self.unit();
        let normal = (-2.0 * u1.ln()).sqrt() * (std::f64::consts::TAU * u2).cos();
        (mu + sigma * normal).exp()
    }

    pub fn fill_bytes(&mut self, out: &mut [u8]) {
        for chunk in out.chunks_mut(8) {
            let bytes = self.next_u64().to_le_bytes();
            chunk.copy_from_slice(&bytes[..chunk.len()]);
        }
    }

    /// A non-zero id of `N` bytes (trace ids: 16, span ids: 8).
    pub fn id<const N: usize>(&mut self) -> [u8; N] {
        loop {
            let mut id = [0u8; N];
            self.fill_bytes(&mut id);
            if id.iter().any(|b| *b != 0) {
                return id;
            }
        }
    }
}

/// Index drawn from cumulative weights (`cumulative` ascending, last = total).
pub fn pick_weighted(rng: &mut Prng, cumulative: &[f64]) -> usize {
    let total = cumulative.last().copied().unwrap_or(0.0);
    let x = rng.unit() * total;
    cumulative
        .partition_point(|c| *c <= x)
        .min(cumulative.len().saturating_sub(1))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn splitmix_reference_values() {
        // Reference outputs of SplitMix64 seeded with 1234567.
        let mut rng = Prng::new(1234567);
        assert_eq!(rng.next_u64(), 6457827717110365317);
        assert_eq!(rng.next_u64(), 3203168211198807973);
    }

    #[test]
    fn below_stays_in_range_and_covers_it() {
        let mut rng = Prng::new(1);
        let mut seen = [false; 7];
        for _ in 0..1000 {
            let x = rng.below(7) as usize;
            seen[x] = true;
        }
        assert!(seen.iter().all(|s| *s));
    }

    #[test]
    fn weighted_pick_follows_weights() {
        let mut rng = Prng::new(9);
        let cumulative = [1.0, 1.0, 4.0]; // weights 1, 0, 3
        let mut counts = [0usize; 3];
        for _ in 0..10_000 {
            counts[pick_weighted(&mut rng, &cumulative)] += 1;
        }
        assert_eq!(counts[1], 0);
        assert!(counts[2] > 2 * counts[0], "{counts:?}");
    }
}
