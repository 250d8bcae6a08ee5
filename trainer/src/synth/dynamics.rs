//! Generated multi-output data sets whose truth is known: one-step models
//! of two dynamical systems and a kinematic chain, the kind of
//! vector-valued model a control loop needs, and a pair of outputs that
//! truly share (one quantity and twice it). Used by the multi-output
//! benchmark (`cargo run --release -p sgp-trainer --example multi_output`)
//! and the tests.

use nalgebra::DMatrix;
use rand::{Rng, SeedableRng};
use rand_chacha::ChaCha8Rng;
use rand_distr::StandardNormal;

use crate::data::multi_target::MultiTargetData;
use crate::Result;

named_enum! {
    /// Which system generates the data.
    #[derive(Clone, Copy, Debug, PartialEq, Eq)]
    pub enum System {
        /// Cart-pole (cart 1 kg, pole 0.1 kg): from position, velocity, pole
        /// angle, angular velocity, push force and pole half-length, the
        /// changes of velocity and angular velocity over one 50 ms step.
        CartPole = "cart-pole",
        /// Damped pendulum driven by a torque: from angle, angular velocity and
        /// torque, the changes of angle and angular velocity over 100 ms.
        Pendulum = "pendulum",
        /// Three-link arm on a rotating base (links 0.5, 0.4, 0.2 m): from the
        /// four joint angles, the end effector's x, y and z.
        Arm = "arm",
        /// Outputs that truly share: the pendulum's change of angular
        /// velocity and twice it, each with its own noise.
        Doubled = "doubled",
    }
}

/// Standard deviation of each output's measurement noise, as a fraction
/// of that output's spread over the input box.
pub(crate) const NOISE_FRACTION: f64 = 0.05;

impl System {
    /// Input column names.
    pub fn inputs(self) -> Vec<String> {
        let names: &[&str] = match self {
            System::CartPole => &["x", "v", "theta", "omega", "force", "half_length"],
            System::Pendulum | System::Doubled => &["theta", "omega", "torque"],
            System::Arm => &["q0", "q1", "q2", "q3"],
        };
        names.iter().map(|s| s.to_string()).collect()
    }

    /// Output column names.
    pub fn outputs(self) -> Vec<String> {
        let names: &[&str] = match self {
            System::CartPole => &["dv", "domega"],
            System::Pendulum => &["dtheta", "domega"],
            System::Arm => &["ex", "ey", "ez"],
            System::Doubled => &["domega", "twice"],
        };
        names.iter().map(|s| s.to_string()).collect()
    }

    /// The input box, one `(low, high)` per input.
    fn ranges(self) -> Vec<(f64, f64)> {
        use std::f64::consts::PI;
        match self {
            System::CartPole => vec![
                (-2.0, 2.0),
                (-2.0, 2.0),
                (-0.6, 0.6),
                (-2.0, 2.0),
                (-10.0, 10.0),
                (0.3, 0.7),
            ],
            System::Pendulum | System::Doubled => vec![(-PI, PI), (-4.0, 4.0), (-2.0, 2.0)],
            System::Arm => vec![
                (-PI / 2.0, PI / 2.0),
                (-PI / 2.0, PI / 2.0),
                (-2.0, 2.0),
                (-1.5, 1.5),
            ],
        }
    }

    /// The noise-free outputs at the input `s`.
    pub fn truth(self, s: &[f64]) -> Vec<f64> {
        match self {
            System::CartPole => cart_pole_step(s),
            System::Pendulum => pendulum_step(s),
            System::Arm => arm_position(s),
            System::Doubled => {
                let domega = pendulum_step(s)[1];
                vec![domega, 2.0 * domega]
            }
        }
    }

    /// `n` rows drawn uniformly in the input box with noisy outputs
    /// (noise sd `NOISE_FRACTION` of each output's spread), and the
    /// noise-free outputs; deterministic in `seed`.
    pub fn generate(self, n: usize, seed: u64) -> (DMatrix<f64>, DMatrix<f64>, DMatrix<f64>) {
        self.generate_in(n, seed, 1.0)
    }

    /// [`System::generate`] in the input box shrunk about its centre to
    /// `fraction` of its width along every input (1: the whole box), the
    /// noise still `NOISE_FRACTION` of each output's spread there.
    pub fn generate_in(
        self,
        n: usize,
        seed: u64,
        fraction: f64,
    ) -> (DMatrix<f64>, DMatrix<f64>, DMatrix<f64>) {
        let mut rng = ChaCha8Rng::seed_from_u64(seed);
        let ranges: Vec<(f64, f64)> = if fraction == 1.0 {
            self.ranges()
        } else {
            let shrunk = |(lo, hi): (f64, f64)| {
                let (centre, half) = ((lo + hi) / 2.0, fraction * (hi - lo) / 2.0);
                (centre - half, centre + half)
            };
            self.ranges().into_iter().map(shrunk).collect()
        };
        let x = DMatrix::from_fn(n, ranges.len(), |_, j| {
            let (lo, hi) = ranges[j];
            rng.random_range(lo..hi)
        });
        let rows: Vec<Vec<f64>> = x
            .row_iter()
            .map(|r| self.truth(&r.iter().copied().collect::<Vec<_>>()))
            .collect();
        let p = self.outputs().len();
        let truth = DMatrix::from_fn(n, p, |i, j| rows[i][j]);
        let sd = noise_sd(&truth);
        let y = DMatrix::from_fn(n, p, |i, j| {
            truth[(i, j)] + sd[j] * rng.sample::<f64, _>(StandardNormal)
        });
        (x, y, truth)
    }

    /// [`System::generate`]'s rows as CSV (`sgp synth --system`): the
    /// inputs, then the noisy outputs, with a header of their names.
    ///
    /// # Errors
    /// A failed write.
    pub fn write_csv(
        self,
        n: usize,
        seed: u64,
        out: &mut impl std::io::Write,
    ) -> std::io::Result<()> {
        let (x, y, _) = self.generate(n, seed);
        let mut header = self.inputs();
        header.extend(self.outputs());
        writeln!(out, "{}", header.join(","))?;
        for (xr, yr) in x.row_iter().zip(y.row_iter()) {
            let cells: Vec<String> = xr.iter().chain(yr.iter()).map(|v| v.to_string()).collect();
            writeln!(out, "{}", cells.join(","))?;
        }
        Ok(())
    }

    /// [`System::generate`] as multi-target data.
    ///
    /// # Errors
    /// As [`MultiTargetData::from_raw`] (fewer than two rows).
    #[cfg_attr(feature = "internals", visibility::make(pub))]
    pub(crate) fn data(self, n: usize, seed: u64) -> Result<MultiTargetData> {
        self.data_in(n, seed, 1.0)
    }

    /// [`System::generate_in`] as multi-target data.
    ///
    /// # Errors
    /// As [`MultiTargetData::from_raw`] (fewer than two rows).
    #[cfg_attr(feature = "internals", visibility::make(pub))]
    pub(crate) fn data_in(self, n: usize, seed: u64, fraction: f64) -> Result<MultiTargetData> {
        let (x, y, _) = self.generate_in(n, seed, fraction);
        MultiTargetData::from_raw(x, y, self.inputs(), &self.outputs())
    }
}

/// Each output's noise standard deviation for the noise-free outputs
/// `truth` (one column per output): `NOISE_FRACTION` of its spread. The
/// root mean squared error of a perfect model on noisy rows.
#[cfg_attr(feature = "internals", visibility::make(pub))]
pub(crate) fn noise_sd(truth: &DMatrix<f64>) -> Vec<f64> {
    truth
        .column_iter()
        .map(|c| NOISE_FRACTION * c.variance().sqrt())
        .collect()
}

/// One 50 ms step of the cart-pole (Barto, Sutton and Anderson's
/// equations), integrated in ten Euler sub-steps.
fn cart_pole_step(s: &[f64]) -> Vec<f64> {
    const G: f64 = 9.8;
    const CART: f64 = 1.0;
    const POLE: f64 = 0.1;
    const DT: f64 = 0.05;
    const SUB: usize = 10;
    let (force, half) = (s[4], s[5]);
    let (mut v, mut theta, mut omega) = (s[1], s[2], s[3]);
    let (v0, omega0) = (v, omega);
    let total = CART + POLE;
    for _ in 0..SUB {
        let (sin, cos) = theta.sin_cos();
        let temp = (force + POLE * half * omega * omega * sin) / total;
        let alpha = (G * sin - cos * temp) / (half * (4.0 / 3.0 - POLE * cos * cos / total));
        let acc = temp - POLE * half * alpha * cos / total;
        let h = DT / SUB as f64;
        v += h * acc;
        theta += h * omega;
        omega += h * alpha;
    }
    vec![v - v0, omega - omega0]
}

/// One 100 ms step of a damped, torque-driven pendulum (1 m, 1 kg,
/// damping 0.1), integrated by classical Runge-Kutta in five sub-steps.
fn pendulum_step(s: &[f64]) -> Vec<f64> {
    const G: f64 = 9.8;
    const DAMPING: f64 = 0.1;
    const DT: f64 = 0.1;
    const SUB: usize = 5;
    let torque = s[2];
    let f = |th: f64, om: f64| (om, -G * libm::sin(th) - DAMPING * om + torque);
    let (mut th, mut om) = (s[0], s[1]);
    let h = DT / SUB as f64;
    for _ in 0..SUB {
        let k1 = f(th, om);
        let k2 = f(th + 0.5 * h * k1.0, om + 0.5 * h * k1.1);
        let k3 = f(th + 0.5 * h * k2.0, om + 0.5 * h * k2.1);
        let k4 = f(th + h * k3.0, om + h * k3.1);
        th += h / 6.0 * (k1.0 + 2.0 * k2.0 + 2.0 * k3.0 + k4.0);
        om += h / 6.0 * (k1.1 + 2.0 * k2.1 + 2.0 * k3.1 + k4.1);
    }
    vec![th - s[0], om - s[1]]
}

/// Forward kinematics of a three-link arm in a vertical plane turned by
/// the base angle `q0`.
fn arm_position(q: &[f64]) -> Vec<f64> {
    const LINKS: [f64; 3] = [0.5, 0.4, 0.2];
    let (mut reach, mut height, mut angle) = (0.0, 0.0, 0.0);
    for (link, dq) in LINKS.iter().zip(&q[1..4]) {
        angle += dq;
        reach += link * libm::cos(angle);
        height += link * libm::sin(angle);
    }
    vec![reach * libm::cos(q[0]), reach * libm::sin(q[0]), height]
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn known_states_give_known_outputs() {
        // Arm stretched out along x, level.
        let e = System::Arm.truth(&[0.0, 0.0, 0.0, 0.0]);
        assert!((e[0] - 1.1).abs() < 1e-12 && e[1].abs() < 1e-12 && e[2].abs() < 1e-12);
        // Base turned a quarter: the reach moves to y.
        let e = System::Arm.truth(&[std::f64::consts::FRAC_PI_2, 0.0, 0.0, 0.0]);
        assert!(e[0].abs() < 1e-12 && (e[1] - 1.1).abs() < 1e-12);
        // A pendulum at rest at the bottom with no torque stays there.
        let d = System::Pendulum.truth(&[0.0, 0.0, 0.0]);
        assert!(d.iter().all(|v| v.abs() < 1e-12));
        // Upright pole at rest, no force: nothing moves; a push accelerates
        // the cart forward and tips the pole back.
        let d = System::CartPole.truth(&[0.0, 0.0, 0.0, 0.0, 0.0, 0.5]);
        assert!(d.iter().all(|v| v.abs() < 1e-12));
        let d = System::CartPole.truth(&[0.0, 0.0, 0.0, 0.0, 10.0, 0.5]);
        assert!(d[0] > 0.0 && d[1] < 0.0, "{d:?}");
    }

    #[test]
    fn generated_sets_are_deterministic_and_shaped() {
        for &system in System::ALL {
            let (x, y, truth) = system.generate(50, 3);
            assert_eq!(x.ncols(), system.inputs().len());
            assert_eq!(y.ncols(), system.outputs().len());
            assert_eq!(system.generate(50, 3).1, y);
            let noise = (&y - &truth).column(0).variance().sqrt();
            let spread = truth.column(0).variance().sqrt();
            assert!(
                noise > 0.0 && noise < 2.0 * NOISE_FRACTION * spread,
                "{}",
                system.name()
            );
            assert_eq!(system.data(50, 3).unwrap().n_outputs(), y.ncols());
            let mut csv = Vec::new();
            system.write_csv(50, 3, &mut csv).unwrap();
            let text = String::from_utf8(csv).unwrap();
            assert_eq!(text.lines().count(), 51);
            let first: Vec<f64> = text
                .lines()
                .nth(1)
                .unwrap()
                .split(',')
                .map(|c| c.parse().unwrap())
                .collect();
            assert_eq!(first[x.ncols()], y[(0, 0)], "values round-trip");
        }
    }

    #[test]
    fn a_shrunk_box_keeps_its_centre_and_its_noise_fraction() {
        for &system in System::ALL {
            let (x, _, _) = system.generate(400, 5);
            let (half, y, truth) = system.generate_in(400, 5, 0.5);
            for (j, (lo, hi)) in system.ranges().into_iter().enumerate() {
                let (centre, quarter) = ((lo + hi) / 2.0, (hi - lo) / 4.0);
                let column = half.column(j);
                assert!(column.iter().all(|v| (v - centre).abs() <= quarter));
                assert!(x.column(j).iter().any(|v| (v - centre).abs() > quarter));
            }
            let noise = (&y - &truth).column(0).variance().sqrt();
            let floor = noise_sd(&truth)[0];
            assert!((noise / floor - 1.0).abs() < 0.2, "{}", system.name());
        }
    }
}
