//! The five functions of the C math library the binary calls — `exp`, `log`,
//! `log1p`, `log2` and `pow`: tokio's scheduler statistics, the Prometheus
//! summaries' sketches, OpenTelemetry's exponential histograms and SQLite's
//! math and full-text functions — defined here, from the `libm` crate (the
//! Rust port of musl's math library that Rust's own `compiler-builtins`
//! uses), so the linker resolves them in the binary and the binary needs no
//! `libm.so.6`: 0.9 MB of the container image, which carries the shared
//! libraries `ldd` names (native/container/build.sh).
//!
//! The results are within one unit in the last place, as the C standard
//! allows and as the image's static musl build gave before; glibc's are
//! mostly correctly rounded (`exp(1)` reads 2.7182818284590455 here,
//! 2.718281828459045 from glibc). A function of the
//! math library the binary starts calling brings `libm.so.6` back;
//! tests/container.sh fails then, naming it.
//!
//! Exported C symbols are unsafe attributes (an item of that name elsewhere
//! would clash at link time): the third `#[allow(unsafe_code)]` of the
//! workspace (the lint is `deny`, not `forbid`).
#![allow(unsafe_code)]

/// e raised to `x`.
#[unsafe(no_mangle)]
pub(crate) extern "C" fn exp(x: f64) -> f64 {
    libm::exp(x)
}

/// The natural logarithm of `x`.
#[unsafe(no_mangle)]
pub(crate) extern "C" fn log(x: f64) -> f64 {
    libm::log(x)
}

/// The natural logarithm of `1 + x`, exact for small `x`.
#[unsafe(no_mangle)]
pub(crate) extern "C" fn log1p(x: f64) -> f64 {
    libm::log1p(x)
}

/// The base-2 logarithm of `x`.
#[unsafe(no_mangle)]
pub(crate) extern "C" fn log2(x: f64) -> f64 {
    libm::log2(x)
}

/// `x` raised to `y`.
#[unsafe(no_mangle)]
pub(crate) extern "C" fn pow(x: f64, y: f64) -> f64 {
    libm::pow(x, y)
}

#[cfg(test)]
mod tests {
    // The test binary links these symbols too: `f64::exp` and the others
    // call them here, so the expected values are written out, not computed
    // by the standard library.

    /// `actual` is `expected` or one of its two neighbours.
    fn assert_within_one_ulp(actual: f64, expected: f64) {
        let distance = actual.to_bits().abs_diff(expected.to_bits());
        assert!(distance <= 1, "{actual} is {distance} units in the last place from {expected}");
    }

    #[test]
    fn exact_values_and_the_c_standards_special_cases() {
        assert_eq!(super::exp(0.0), 1.0);
        assert_within_one_ulp(super::exp(1.0), std::f64::consts::E);
        assert_eq!(super::exp(f64::NEG_INFINITY), 0.0);
        assert_eq!(super::exp(1000.0), f64::INFINITY);
        assert_eq!(super::log(1.0), 0.0);
        assert_within_one_ulp(super::log(std::f64::consts::E), 1.0);
        assert_within_one_ulp(super::pow(10.0, 0.5), 3.162_277_660_168_379_5); // the square root of 10
        assert_eq!(super::log(0.0), f64::NEG_INFINITY);
        assert!(super::log(-1.0).is_nan());
        assert_eq!(super::log1p(0.0), 0.0);
        assert_eq!(super::log1p(1e-300), 1e-300);
        assert_eq!(super::log1p(-1.0), f64::NEG_INFINITY);
        assert_eq!(super::log2(8.0), 3.0);
        assert_eq!(super::log2(0.5), -1.0);
        assert_eq!(super::log2(f64::from_bits(1)), -1074.0); // the least subnormal, 2^-1074
        assert_eq!(super::pow(2.0, 10.0), 1024.0);
        assert_eq!(super::pow(9.0, 0.5), 3.0);
        assert_eq!(super::pow(0.0, -1.0), f64::INFINITY);
        assert_eq!(super::pow(f64::NAN, 0.0), 1.0);
        assert!(super::pow(-8.0, 1.0 / 3.0).is_nan());
    }

    #[test]
    fn the_standard_librarys_methods_reach_these_definitions() {
        // What tokio, the metrics and SQLite call: the same answers through
        // f64's methods as from the functions above, bit for bit.
        // black_box: no constant folded by the compiler with its own math.
        for x in [0.1_f64, 0.5, 1.5, 2.0, 10.0, 123.456, 1e-10, 1e10].map(std::hint::black_box) {
            assert_eq!(x.exp().to_bits(), super::exp(x).to_bits(), "exp({x})");
            assert_eq!(x.ln().to_bits(), super::log(x).to_bits(), "log({x})");
            assert_eq!(x.ln_1p().to_bits(), super::log1p(x).to_bits(), "log1p({x})");
            assert_eq!(x.log2().to_bits(), super::log2(x).to_bits(), "log2({x})");
            assert_eq!(x.powf(1.7).to_bits(), super::pow(x, 1.7).to_bits(), "pow({x}, 1.7)");
        }
    }
}
