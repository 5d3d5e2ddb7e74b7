//! `series_fft(real [, imag])` and `series_ifft(real [, imag])`: the discrete Fourier transform
//! of a complex series and its inverse (divided by the length, so `series_ifft` of
//! `series_fft` gives the series back), as the bags of `__series_fft` / `__series_ifft` whose
//! `real` and `imag` arrays the planner turns into two columns. Lengths that are powers of two
//! use the radix-2 FFT, others Bluestein's algorithm over a power-of-two FFT: O(n log n) for
//! every length. Elements that are not numbers count as 0; a missing or shorter imaginary part
//! is 0.

use std::f64::consts::PI;

use datafusion::error::Result;
use serde_json::json;

use crate::json::{out, parse_array};
use crate::rowfn::{Out, Val, arg};
use crate::series_analysis::{array_json, numbers};

#[derive(Debug, Clone, Copy, PartialEq)]
struct Complex {
    re: f64,
    im: f64,
}

impl Complex {
    fn mul(self, other: Complex) -> Complex {
        Complex {
            re: self.re * other.re - self.im * other.im,
            im: self.re * other.im + self.im * other.re,
        }
    }

    fn add(self, other: Complex) -> Complex {
        Complex {
            re: self.re + other.re,
            im: self.im + other.im,
        }
    }

    fn sub(self, other: Complex) -> Complex {
        Complex {
            re: self.re - other.re,
            im: self.im - other.im,
        }
    }

    fn conj(self) -> Complex {
        Complex {
            re: self.re,
            im: -self.im,
        }
    }

    fn unit(angle: f64) -> Complex {
        Complex {
            re: angle.cos(),
            im: angle.sin(),
        }
    }
}

/// In-place radix-2 FFT of a power-of-two length (`sign` −1 forward, +1 inverse, unscaled).
fn radix2(values: &mut [Complex], sign: f64) {
    let n = values.len();
    if n <= 1 {
        return;
    }
    // Bit-reversal permutation.
    let mut j = 0;
    for i in 1..n {
        let mut bit = n >> 1;
        while j & bit != 0 {
            j ^= bit;
            bit >>= 1;
        }
        j |= bit;
        if i < j {
            values.swap(i, j);
        }
    }
    let mut len = 2;
    while len <= n {
        let step = Complex::unit(sign * 2.0 * PI / len as f64);
        for start in (0..n).step_by(len) {
            let mut w = Complex { re: 1.0, im: 0.0 };
            for k in 0..len / 2 {
                let a = values[start + k];
                let b = values[start + k + len / 2].mul(w);
                values[start + k] = a.add(b);
                values[start + k + len / 2] = a.sub(b);
                w = w.mul(step);
            }
        }
        len <<= 1;
    }
}

/// The DFT of any length (`sign` −1 forward, +1 inverse, unscaled).
fn transform(values: &[Complex], sign: f64) -> Vec<Complex> {
    let n = values.len();
    if n.is_power_of_two() || n <= 1 {
        let mut out = values.to_vec();
        radix2(&mut out, sign);
        return out;
    }
    // Bluestein: x_k·w_k convolved with conj(w), w_k = e^(sign·iπk²/n).
    let m = (2 * n - 1).next_power_of_two();
    let chirp: Vec<Complex> = (0..n)
        .map(|k| {
            // k² mod 2n keeps the angle small and exact for large k.
            let k2 = ((k as u128 * k as u128) % (2 * n as u128)) as f64;
            Complex::unit(sign * PI * k2 / n as f64)
        })
        .collect();
    let zero = Complex { re: 0.0, im: 0.0 };
    let mut a = vec![zero; m];
    for k in 0..n {
        a[k] = values[k].mul(chirp[k]);
    }
    let mut b = vec![zero; m];
    b[0] = chirp[0].conj();
    for k in 1..n {
        b[k] = chirp[k].conj();
        b[m - k] = chirp[k].conj();
    }
    radix2(&mut a, -1.0);
    radix2(&mut b, -1.0);
    for (x, y) in a.iter_mut().zip(&b) {
        *x = x.mul(*y);
    }
    radix2(&mut a, 1.0);
    let scale = 1.0 / m as f64;
    (0..n)
        .map(|k| {
            let v = Complex {
                re: a[k].re * scale,
                im: a[k].im * scale,
            };
            v.mul(chirp[k])
        })
        .collect()
}

fn complex_series(args: &[Val]) -> Option<Vec<Complex>> {
    let real = numbers(&parse_array(arg(args, 0))?);
    let imag = parse_array(arg(args, 1))
        .map(|items| numbers(&items))
        .unwrap_or_default();
    Some(
        real.iter()
            .enumerate()
            .map(|(i, re)| Complex {
                re: re.unwrap_or(0.0),
                im: imag.get(i).copied().flatten().unwrap_or(0.0),
            })
            .collect(),
    )
}

fn bag(values: &[Complex]) -> Out {
    let real: Vec<f64> = values.iter().map(|c| c.re).collect();
    let imag: Vec<f64> = values.iter().map(|c| c.im).collect();
    out(json!({"real": array_json(&real), "imag": array_json(&imag)}))
}

/// `__series_fft(real [, imag])`.
pub fn series_fft_bag(args: &[Val]) -> Result<Out> {
    Ok(complex_series(args).map_or(Out::Null, |series| bag(&transform(&series, -1.0))))
}

/// `__series_ifft(real [, imag])`.
pub fn series_ifft_bag(args: &[Val]) -> Result<Out> {
    Ok(complex_series(args).map_or(Out::Null, |series| {
        let n = series.len().max(1) as f64;
        let values: Vec<Complex> = transform(&series, 1.0)
            .into_iter()
            .map(|c| Complex {
                re: c.re / n,
                im: c.im / n,
            })
            .collect();
        bag(&values)
    }))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn naive(values: &[Complex], sign: f64) -> Vec<Complex> {
        let n = values.len();
        (0..n)
            .map(|k| {
                values
                    .iter()
                    .enumerate()
                    .fold(Complex { re: 0.0, im: 0.0 }, |acc, (t, x)| {
                        acc.add(x.mul(Complex::unit(sign * 2.0 * PI * (k * t) as f64 / n as f64)))
                    })
            })
            .collect()
    }

    #[test]
    fn every_length_matches_the_definition() {
        for n in [1usize, 2, 3, 5, 8, 12, 17, 64, 100] {
            let values: Vec<Complex> = (0..n)
                .map(|i| Complex {
                    re: (i as f64 * 0.7).sin() + i as f64 * 0.1,
                    im: (i as f64 * 1.3).cos(),
                })
                .collect();
            let fast = transform(&values, -1.0);
            let slow = naive(&values, -1.0);
            for (a, b) in fast.iter().zip(&slow) {
                assert!(
                    (a.re - b.re).abs() < 1e-9 && (a.im - b.im).abs() < 1e-9,
                    "n = {n}: {a:?} vs {b:?}"
                );
            }
        }
    }

    #[test]
    fn the_inverse_gives_the_series_back() {
        let series = json!([1.0, 2.0, 0.0, -1.0, 4.0, 5.5, 3.0]).to_string();
        let Ok(Out::Str(forward)) = series_fft_bag(&[Val::Str(&series)]) else {
            panic!("a bag");
        };
        let forward: serde_json::Value = serde_json::from_str(&forward).unwrap_or_default();
        let (re, im) = (forward["real"].to_string(), forward["imag"].to_string());
        let Ok(Out::Str(back)) = series_ifft_bag(&[Val::Str(&re), Val::Str(&im)]) else {
            panic!("a bag");
        };
        let back: serde_json::Value = serde_json::from_str(&back).unwrap_or_default();
        for (i, want) in [1.0, 2.0, 0.0, -1.0, 4.0, 5.5, 3.0].iter().enumerate() {
            assert!((back["real"][i].as_f64().unwrap_or(f64::NAN) - want).abs() < 1e-9);
            assert!(back["imag"][i].as_f64().unwrap_or(f64::NAN).abs() < 1e-9);
        }
        // A constant: all of it at frequency 0.
        let Ok(Out::Str(flat)) = series_fft_bag(&[Val::Str("[2,2,2,2]")]) else {
            panic!("a bag");
        };
        let flat: serde_json::Value = serde_json::from_str(&flat).unwrap_or_default();
        assert_eq!(flat["real"], json!([8.0, 0.0, 0.0, 0.0]));
    }
}
