//! Memory cost formulas of the predictive batcher, as the core evaluates them: one polynomial in
//! the variables per coefficient, plus the coefficient-free part. The text is parsed, expanded,
//! checked and canonicalised once, by TypeScript (`ts/config/formula.ts`, which needs the
//! canonical text for identifiers); the core receives the expanded terms (`formula_terms`).

use crate::config::FormulaTerm;
use crate::{Error, Result};

/// One term of a coefficient's group: a numeric factor times powers of the variables.
#[derive(Debug, Clone, PartialEq)]
pub struct Monomial {
    /// The numeric factor (a whole number, as TypeScript checked).
    pub factor: f64,
    /// The power of each variable, in [`Formula::variable_names`] order.
    pub exponents: Vec<u32>,
}

impl Monomial {
    /// `factor · Π values[i]^exponents[i]`.
    pub fn eval(&self, values: &[f64]) -> f64 {
        self.exponents
            .iter()
            .zip(values)
            .fold(self.factor, |acc, (e, v)| acc * v.powi(*e as i32))
    }
}

/// An expanded formula: one polynomial in the variables per coefficient, plus the
/// coefficient-free part, each in the order of its terms.
#[derive(Debug, Clone, PartialEq)]
pub struct Formula {
    coefficients: Vec<String>,
    variables: Vec<String>,
    groups: Vec<Vec<Monomial>>,
    constant: Vec<Monomial>,
}

impl Formula {
    /// The formula of `terms` over the declared coefficient and variable names; `path` is the
    /// batcher's configuration path, named in errors.
    ///
    /// # Errors
    /// A name declared both as a coefficient and as a variable, or a term with an undeclared
    /// coefficient or variable, or a factor that is not finite.
    pub fn new(
        terms: &[FormulaTerm],
        coefficient_names: &[String],
        variable_names: &[String],
        path: &str,
    ) -> Result<Formula> {
        let mut coefficients = coefficient_names.to_vec();
        coefficients.sort();
        coefficients.dedup();
        let mut variables = variable_names.to_vec();
        variables.sort();
        variables.dedup();
        if let Some(both) = coefficients.iter().find(|c| variables.contains(c)) {
            return Err(Error::config(
                format!("{path}.coefficient_names"),
                format!("\"{both}\" is declared both as a coefficient and as a variable"),
            ));
        }
        let mut groups: Vec<Vec<Monomial>> = vec![Vec::new(); coefficients.len()];
        let mut constant = Vec::new();
        for (i, term) in terms.iter().enumerate() {
            let at = |message: String| Error::config(format!("{path}.formula_terms[{i}]"), message);
            if !term.factor.is_finite() {
                return Err(at(format!("the factor {} is not finite", term.factor)));
            }
            let mut exponents = vec![0; variables.len()];
            for (name, power) in &term.powers {
                let Some(k) = variables.iter().position(|v| v == name) else {
                    return Err(at(format!(
                        "\"{name}\" is not one of the variables {variables:?}"
                    )));
                };
                exponents[k] = u32::try_from(*power)
                    .map_err(|_| at(format!("the power of \"{name}\" is too large: {power}")))?;
            }
            let monomial = Monomial {
                factor: term.factor,
                exponents,
            };
            match &term.coefficient {
                None => constant.push(monomial),
                Some(name) => match coefficients.iter().position(|c| c == name) {
                    Some(k) => groups[k].push(monomial),
                    None => {
                        return Err(at(format!(
                            "\"{name}\" is not one of the coefficients {coefficients:?}"
                        )))
                    }
                },
            }
        }
        Ok(Formula {
            coefficients,
            variables,
            groups,
            constant,
        })
    }

    /// Coefficient names, sorted: the order of the fitted coefficients.
    pub fn coefficient_names(&self) -> &[String] {
        &self.coefficients
    }

    /// Variable names, sorted: the order of [`Monomial::exponents`].
    pub fn variable_names(&self) -> &[String] {
        &self.variables
    }

    /// The polynomial multiplying each coefficient (empty when the coefficient does not occur).
    pub fn groups(&self) -> &[Vec<Monomial>] {
        &self.groups
    }

    /// The coefficient-free part (known, not fitted).
    pub fn constant(&self) -> &[Monomial] {
        &self.constant
    }
}

#[cfg(test)]
#[path = "formula_tests.rs"]
pub(crate) mod tests;
