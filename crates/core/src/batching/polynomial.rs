//! Exact polynomial arithmetic for expanding cost formulas: fractions that stay reduced and
//! polynomials over the formula's symbols, with overflow reported instead of wrapping.

use std::collections::BTreeMap;
use std::fmt;

use super::formula::{FormulaError, Parsed};

/// An exact fraction, always reduced with a positive denominator.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) struct Rational {
    pub num: i128,
    pub den: i128,
}

fn gcd(a: i128, b: i128) -> i128 {
    let (mut a, mut b) = (a.abs(), b.abs());
    while b != 0 {
        (a, b) = (b, a % b);
    }
    a
}

fn too_large() -> FormulaError {
    FormulaError("the formula's numbers grow too large".into())
}

impl Rational {
    pub fn whole(n: i128) -> Self {
        Rational { num: n, den: 1 }
    }

    pub fn new(num: i128, den: i128) -> Self {
        let g = gcd(num, den).max(1);
        let sign = if den < 0 { -1 } else { 1 };
        Rational {
            num: sign * num / g,
            den: sign * den / g,
        }
    }

    pub fn recip(self) -> Self {
        Rational::new(self.den, self.num)
    }

    pub fn add(self, o: Self) -> Parsed<Self> {
        let num = self
            .num
            .checked_mul(o.den)
            .zip(o.num.checked_mul(self.den))
            .and_then(|(a, b)| a.checked_add(b))
            .ok_or_else(too_large)?;
        let den = self.den.checked_mul(o.den).ok_or_else(too_large)?;
        Ok(Rational::new(num, den))
    }

    pub fn mul(self, o: Self) -> Parsed<Self> {
        let num = self.num.checked_mul(o.num).ok_or_else(too_large)?;
        let den = self.den.checked_mul(o.den).ok_or_else(too_large)?;
        Ok(Rational::new(num, den))
    }

    pub fn as_i64(self) -> Option<i64> {
        if self.den == 1 {
            i64::try_from(self.num).ok()
        } else {
            None
        }
    }
}

impl fmt::Display for Rational {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        if self.den == 1 {
            write!(f, "{}", self.num)
        } else {
            write!(f, "{}/{}", self.num, self.den)
        }
    }
}

/// A polynomial over all symbols with exact fractional factors; zero terms are never stored.
#[derive(Debug, Clone)]
pub(super) struct Poly {
    pub terms: BTreeMap<Vec<u32>, Rational>,
    nsym: usize,
}

impl Poly {
    pub fn constant(value: Rational, nsym: usize) -> Self {
        let mut terms = BTreeMap::new();
        if value.num != 0 {
            terms.insert(vec![0; nsym], value);
        }
        Poly { terms, nsym }
    }

    pub fn symbol(index: usize, nsym: usize) -> Self {
        let mut exponents = vec![0; nsym];
        exponents[index] = 1;
        Poly {
            terms: BTreeMap::from([(exponents, Rational::whole(1))]),
            nsym,
        }
    }

    pub fn as_constant(&self) -> Option<Rational> {
        match self.terms.len() {
            0 => Some(Rational::whole(0)),
            1 => self
                .terms
                .iter()
                .next()
                .filter(|(e, _)| e.iter().all(|x| *x == 0))
                .map(|(_, v)| *v),
            _ => None,
        }
    }

    pub fn add_term(&mut self, exponents: Vec<u32>, value: Rational) -> Parsed<()> {
        let sum = match self.terms.get(&exponents) {
            Some(old) => old.add(value)?,
            None => value,
        };
        if sum.num == 0 {
            self.terms.remove(&exponents);
        } else {
            self.terms.insert(exponents, sum);
        }
        Ok(())
    }

    pub fn add(mut self, other: &Poly) -> Parsed<Poly> {
        for (e, v) in &other.terms {
            self.add_term(e.clone(), *v)?;
        }
        Ok(self)
    }

    pub fn scale(self, by: Rational) -> Parsed<Poly> {
        let mut out = Poly::constant(Rational::whole(0), self.nsym);
        for (e, v) in self.terms {
            out.add_term(e, v.mul(by)?)?;
        }
        Ok(out)
    }

    pub fn neg(self) -> Parsed<Poly> {
        self.scale(Rational::whole(-1))
    }

    pub fn mul(&self, other: &Poly) -> Parsed<Poly> {
        let mut out = Poly::constant(Rational::whole(0), self.nsym);
        for (ea, va) in &self.terms {
            for (eb, vb) in &other.terms {
                let e: Vec<u32> = ea.iter().zip(eb).map(|(a, b)| a + b).collect();
                out.add_term(e, va.mul(*vb)?)?;
            }
        }
        Ok(out)
    }

    pub fn pow(&self, e: u32) -> Parsed<Poly> {
        let mut out = Poly::constant(Rational::whole(1), self.nsym);
        for _ in 0..e {
            out = out.mul(self)?;
        }
        Ok(out)
    }
}
