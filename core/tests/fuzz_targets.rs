//! Every fuzz target of `core/fuzz` (its body, `core/fuzz/bodies/<target>.rs`)
//! run in every test build over its seeds and regression inputs
//! (`tests/data/fuzz/<target>/`), over those seeds changed at random, and
//! over random inputs: a fixed generator, so a failure here fails again.
//! What libFuzzer finds stays found without a fuzzing build in CI; the
//! search itself is `core/fuzz/run.sh` (RELIABILITY.md).

use std::path::Path;

/// What the bodies import as `libfuzzer_sys`: its `fuzz_target!` as a
/// function `run` over bytes, decoded as libFuzzer's harness decodes them
/// (the bytes as they are for `&[u8]`, else `Arbitrary::arbitrary_take_rest`).
mod shim {
    // The bodies name it `libfuzzer_sys::arbitrary`, as libfuzzer-sys re-exports it.
    #[allow(clippy::single_component_path_imports)]
    pub(crate) use arbitrary;

    macro_rules! fuzz_target {
        (|$data:ident: &[u8]| $body:block) => {
            pub(crate) fn run(bytes: &[u8]) {
                let $data: &[u8] = bytes;
                $body
            }
        };
        (|$data:ident: $ty:ty| $body:block) => {
            pub(crate) fn run(bytes: &[u8]) {
                let unstructured = $crate::shim::arbitrary::Unstructured::new(bytes);
                let Ok($data) = <$ty as $crate::shim::arbitrary::Arbitrary<'_>>::arbitrary_take_rest(unstructured)
                else {
                    return;
                };
                $body
            }
        };
    }
    pub(crate) use fuzz_target;
}

macro_rules! targets {
    ($($name:ident),* $(,)?) => {
        $(
            mod $name {
                use crate::shim as libfuzzer_sys;
                include!(concat!("../fuzz/bodies/", stringify!($name), ".rs"));
            }
        )*
        /// Every target: its name and its body.
        const TARGETS: &[(&str, fn(&[u8]))] = &[$((stringify!($name), $name::run)),*];
    };
}

targets!(config, data_source, endpoint, formats, go_batches, location, plan, template, webhook_delivery);

/// A fixed pseudo-random sequence (xorshift64*).
struct Generator(u64);

impl Generator {
    fn next(&mut self) -> u64 {
        self.0 ^= self.0 >> 12;
        self.0 ^= self.0 << 25;
        self.0 ^= self.0 >> 27;
        self.0.wrapping_mul(0x2545_f491_4f6c_dd1d)
    }

    fn below(&mut self, n: usize) -> usize {
        (self.next() % n.max(1) as u64) as usize
    }

    /// Random bytes, up to `max` of them, leaning to printable text and
    /// the characters the parsers split on.
    fn bytes(&mut self, max: usize) -> Vec<u8> {
        const FAVOURED: &[u8] = b"{}[]():;,.'\"`\\/-_=*# \n\t%$@?&0123456789abcxyzGO";
        let len = self.below(max + 1);
        (0..len)
            .map(|_| match self.below(4) {
                0 => self.next() as u8,
                _ => FAVOURED[self.below(FAVOURED.len())],
            })
            .collect()
    }

    /// `seed` with a few bytes changed, inserted or removed.
    fn mutated(&mut self, seed: &[u8]) -> Vec<u8> {
        let mut out = seed.to_vec();
        for _ in 0..=self.below(4) {
            let at = self.below(out.len() + 1);
            match self.below(3) {
                0 if at < out.len() => out[at] = self.next() as u8,
                1 if at < out.len() => {
                    out.remove(at);
                }
                _ => {
                    let inserted = self.bytes(8);
                    out.splice(at..at, inserted);
                }
            }
        }
        out
    }
}

/// The seeds of `target`, in name order (none when it has no directory).
fn seeds(target: &str) -> Vec<Vec<u8>> {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("../tests/data/fuzz").join(target);
    let Ok(entries) = std::fs::read_dir(&dir) else { return Vec::new() };
    let mut paths: Vec<_> = entries.map(|entry| entry.expect("a seed's directory entry").path()).collect();
    paths.sort();
    paths.iter().map(|path| std::fs::read(path).expect("a seed")).collect()
}

/// Runs `body` over `input`, naming the target and the input when it panics.
fn run_one(target: &str, what: &str, body: fn(&[u8]), input: &[u8]) {
    if std::panic::catch_unwind(|| body(input)).is_err() {
        panic!("fuzz target {target} failed on {what}: {input:?} (keep it under tests/data/fuzz/{target}/ once fixed)");
    }
}

#[test]
fn every_fuzz_target_survives_its_seeds_their_mutations_and_random_inputs() {
    let mut seeded = 0;
    for (target, body) in TARGETS {
        let seeds = seeds(target);
        seeded += usize::from(!seeds.is_empty());
        let mut generator = Generator(0x05ee_d0f5_7a7a ^ target.len() as u64);
        for (index, seed) in seeds.iter().enumerate() {
            run_one(target, &format!("seed {index}"), *body, seed);
            for round in 0..200 {
                let input = generator.mutated(seed);
                run_one(target, &format!("seed {index} changed ({round})"), *body, &input);
            }
        }
        for round in 0..3_000 {
            let input = generator.bytes(512);
            run_one(target, &format!("random input {round}"), *body, &input);
        }
    }
    // The seed directories are found (a moved tests/data would run none).
    assert!(seeded >= 8, "{seeded} targets had seeds");
}
