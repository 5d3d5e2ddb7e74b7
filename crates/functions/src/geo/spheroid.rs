//! Distances on the WGS-84 ellipsoid (Vincenty's inverse formula), for the functions'
//! `use_spheroid` option.

use super::shape::Ll;

const A: f64 = 6_378_137.0;
const F: f64 = 1.0 / 298.257_223_563;

/// Meters between two coordinates on the WGS-84 ellipsoid; `None` when the iteration does not
/// converge (nearly antipodal points).
pub fn distance(p1: Ll, p2: Ll) -> Option<f64> {
    let b = A * (1.0 - F);
    let l = (p2.0 - p1.0).to_radians();
    let u1 = ((1.0 - F) * p1.1.to_radians().tan()).atan();
    let u2 = ((1.0 - F) * p2.1.to_radians().tan()).atan();
    let (sin_u1, cos_u1) = u1.sin_cos();
    let (sin_u2, cos_u2) = u2.sin_cos();
    let mut lambda = l;
    for _ in 0..200 {
        let (sin_l, cos_l) = lambda.sin_cos();
        let sin_sigma = ((cos_u2 * sin_l).powi(2) + (cos_u1 * sin_u2 - sin_u1 * cos_u2 * cos_l).powi(2)).sqrt();
        if sin_sigma == 0.0 {
            return Some(0.0);
        }
        let cos_sigma = sin_u1 * sin_u2 + cos_u1 * cos_u2 * cos_l;
        let sigma = sin_sigma.atan2(cos_sigma);
        let sin_alpha = cos_u1 * cos_u2 * sin_l / sin_sigma;
        let cos2_alpha = 1.0 - sin_alpha * sin_alpha;
        let cos_2sm = if cos2_alpha == 0.0 {
            0.0
        } else {
            cos_sigma - 2.0 * sin_u1 * sin_u2 / cos2_alpha
        };
        let c = F / 16.0 * cos2_alpha * (4.0 + F * (4.0 - 3.0 * cos2_alpha));
        let previous = lambda;
        lambda = l
            + (1.0 - c)
                * F
                * sin_alpha
                * (sigma + c * sin_sigma * (cos_2sm + c * cos_sigma * (-1.0 + 2.0 * cos_2sm * cos_2sm)));
        if (lambda - previous).abs() < 1e-12 {
            let u_sq = cos2_alpha * (A * A - b * b) / (b * b);
            let big_a = 1.0 + u_sq / 16384.0 * (4096.0 + u_sq * (-768.0 + u_sq * (320.0 - 175.0 * u_sq)));
            let big_b = u_sq / 1024.0 * (256.0 + u_sq * (-128.0 + u_sq * (74.0 - 47.0 * u_sq)));
            let delta = big_b
                * sin_sigma
                * (cos_2sm
                    + big_b / 4.0
                        * (cos_sigma * (-1.0 + 2.0 * cos_2sm * cos_2sm)
                            - big_b / 6.0
                                * cos_2sm
                                * (-3.0 + 4.0 * sin_sigma * sin_sigma)
                                * (-3.0 + 4.0 * cos_2sm * cos_2sm)));
            return Some(b * big_a * (sigma - delta));
        }
    }
    None
}

#[cfg(test)]
mod tests {
    #[test]
    fn one_degree_of_longitude_on_the_equator() {
        let Some(d) = super::distance((0.0, 0.0), (1.0, 0.0)) else {
            panic!("converges")
        };
        assert!((d - 111_319.490_793).abs() < 1e-3, "{d}");
    }
}
