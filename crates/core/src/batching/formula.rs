//! Memory cost formulas of the predictive batcher: parsed, fully expanded, checked to be linear in
//! the coefficients, and rendered in the reference's canonical text (it enters experiment
//! identifiers, so equivalent formulas must render identically).
//!
//! Grammar: `+ - * / ** ^`, parentheses, whole numbers and declared names. Division is only by
//! numbers, exponents are whole numbers, and after expansion every numeric factor must be a
//! whole number (the reference accepts fractions; we reject them).

use std::fmt;

use super::polynomial::{Poly, Rational};

/// Why a formula is rejected; [`FormulaError::at`] turns it into a configuration error.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct FormulaError(pub String);

impl fmt::Display for FormulaError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0)
    }
}

impl std::error::Error for FormulaError {}

impl FormulaError {
    /// The configuration error at `path` (e.g. `learner.trainer.batcher.formula`).
    pub fn at(self, path: &str) -> crate::Error {
        crate::Error::config(path, self.0)
    }
}

pub(super) type Parsed<T> = std::result::Result<T, FormulaError>;

pub(super) fn fail<T>(message: impl Into<String>) -> Parsed<T> {
    Err(FormulaError(message.into()))
}

/// One term of a coefficient's group: a whole-number factor times powers of the variables.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Monomial {
    /// The numeric factor (never 0).
    pub factor: i64,
    /// The power of each variable, in [`Formula::variable_names`] order.
    pub exponents: Vec<u32>,
}

impl Monomial {
    /// `factor · Π values[i]^exponents[i]`.
    pub fn eval(&self, values: &[f64]) -> f64 {
        self.exponents
            .iter()
            .zip(values)
            .fold(self.factor as f64, |acc, (e, v)| acc * v.powi(*e as i32))
    }
}

/// A parsed, expanded formula: one polynomial in the variables per coefficient, plus the
/// coefficient-free part. Monomials are sorted by exponent tuple, descending.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Formula {
    coefficients: Vec<String>,
    variables: Vec<String>,
    groups: Vec<Vec<Monomial>>,
    constant: Vec<Monomial>,
}

impl Formula {
    /// Parses `text` over the declared coefficient and variable names.
    ///
    /// # Errors
    /// A syntax error, an undeclared symbol, a name declared twice, a term with several
    /// coefficients or a coefficient power other than 1, or a non-integer numeric factor.
    pub fn parse(
        text: &str,
        coefficient_names: &[String],
        variable_names: &[String],
    ) -> Parsed<Formula> {
        let mut coefficients = coefficient_names.to_vec();
        coefficients.sort();
        coefficients.dedup();
        let mut variables = variable_names.to_vec();
        variables.sort();
        variables.dedup();
        if let Some(both) = coefficients.iter().find(|c| variables.contains(c)) {
            return fail(format!(
                "\"{both}\" is declared both as a coefficient and as a variable"
            ));
        }
        // Symbols: coefficients first, then variables, so a monomial's exponent vector splits.
        let symbols: Vec<&str> = coefficients
            .iter()
            .chain(&variables)
            .map(String::as_str)
            .collect();
        let tokens = tokenize(text)?;
        let undeclared: Vec<&str> = {
            let mut names: Vec<&str> = tokens
                .iter()
                .filter_map(|t| match t {
                    Token::Name(n) if !symbols.contains(&n.as_str()) => Some(n.as_str()),
                    _ => None,
                })
                .collect();
            names.sort_unstable();
            names.dedup();
            names
        };
        if !undeclared.is_empty() {
            return fail(format!(
                "undeclared symbols: {} (declare them in coefficient_names or variable_names)",
                undeclared.join(", ")
            ));
        }
        let mut parser = Parser {
            tokens: &tokens,
            at: 0,
            symbols: &symbols,
        };
        let poly = parser.expression()?;
        if let Some(token) = parser.tokens.get(parser.at) {
            return fail(format!("unexpected {token} after a complete formula"));
        }
        split(poly, coefficients, variables)
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

    /// The canonical text: `coef`, `coef*P` or `coef*(P)` per coefficient in sorted order, then
    /// the coefficient-free part, joined by `" + "`; `"0"` when nothing is left.
    pub fn canonical(&self) -> String {
        let mut parts = Vec::new();
        for (name, group) in self.coefficients.iter().zip(&self.groups) {
            match group.as_slice() {
                [] => {}
                [one] if one.factor == 1 && one.exponents.iter().all(|e| *e == 0) => {
                    parts.push(name.clone())
                }
                [one] => parts.push(format!("{name}*{}", self.render_monomial(one))),
                many => parts.push(format!("{name}*({})", self.render_polynomial(many))),
            }
        }
        if !self.constant.is_empty() {
            parts.push(self.render_polynomial(&self.constant));
        }
        if parts.is_empty() {
            "0".into()
        } else {
            parts.join(" + ")
        }
    }

    fn render_polynomial(&self, poly: &[Monomial]) -> String {
        poly.iter()
            .map(|m| self.render_monomial(m))
            .collect::<Vec<_>>()
            .join(" + ")
    }

    fn render_monomial(&self, m: &Monomial) -> String {
        let mut factors = Vec::new();
        let constant = m.exponents.iter().all(|e| *e == 0);
        if m.factor != 1 || constant {
            factors.push(m.factor.to_string());
        }
        for (name, e) in self.variables.iter().zip(&m.exponents) {
            match e {
                0 => {}
                1 => factors.push(name.clone()),
                e => factors.push(format!("{name}**{e}")),
            }
        }
        factors.join("*")
    }
}

/// Splits an expanded polynomial over all symbols into per-coefficient groups.
fn split(poly: Poly, coefficients: Vec<String>, variables: Vec<String>) -> Parsed<Formula> {
    let ncoef = coefficients.len();
    let mut groups: Vec<Vec<Monomial>> = vec![Vec::new(); ncoef];
    let mut constant = Vec::new();
    for (exponents, factor) in poly.terms.iter().rev() {
        let (coef_part, var_part) = exponents.split_at(ncoef);
        let present: Vec<usize> = (0..ncoef).filter(|i| coef_part[*i] > 0).collect();
        let describe = || {
            let names: Vec<String> = coefficients
                .iter()
                .chain(&variables)
                .zip(exponents)
                .filter(|(_, e)| **e > 0)
                .map(|(n, e)| {
                    if *e == 1 {
                        n.clone()
                    } else {
                        format!("{n}**{e}")
                    }
                })
                .collect();
            if names.is_empty() {
                "(the coefficient-free constant)".to_string()
            } else {
                names.join("*")
            }
        };
        if present.len() >= 2 {
            return fail(format!(
                "multiple coefficients in the term {}: the formula must be linear in its coefficients",
                describe()
            ));
        }
        let Some(factor) = factor.as_i64() else {
            return fail(format!(
                "the term {} has the non-integer factor {factor}: numeric factors must be whole numbers",
                describe()
            ));
        };
        let monomial = Monomial {
            factor,
            exponents: var_part.to_vec(),
        };
        match present.first() {
            None => constant.push(monomial),
            Some(&i) if coef_part[i] == 1 => groups[i].push(monomial),
            Some(&i) => {
                return fail(format!(
                    "the formula is not linear in {} (term {})",
                    coefficients[i],
                    describe()
                ))
            }
        }
    }
    Ok(Formula {
        coefficients,
        variables,
        groups,
        constant,
    })
}

#[derive(Debug, Clone, PartialEq)]
enum Token {
    Number(i128),
    Name(String),
    Op(&'static str),
}

impl fmt::Display for Token {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Token::Number(n) => write!(f, "\"{n}\""),
            Token::Name(n) => write!(f, "\"{n}\""),
            Token::Op(o) => write!(f, "\"{o}\""),
        }
    }
}

fn tokenize(text: &str) -> Parsed<Vec<Token>> {
    const OPS: [&str; 8] = ["**", "+", "-", "*", "/", "^", "(", ")"];
    let mut tokens = Vec::new();
    let mut rest = text;
    while let Some(c) = rest.chars().next() {
        let position = text.len() - rest.len();
        if c.is_whitespace() {
            rest = &rest[c.len_utf8()..];
        } else if c.is_ascii_digit() || c == '.' {
            let end = rest
                .find(|ch: char| !(ch.is_ascii_alphanumeric() || ch == '.' || ch == '_'))
                .unwrap_or(rest.len());
            let literal = &rest[..end];
            if !literal.bytes().all(|b| b.is_ascii_digit()) {
                return fail(format!(
                    "the number \"{literal}\" at position {position} is not a whole number: numeric factors must be whole numbers"
                ));
            }
            let Ok(value) = literal.parse::<i128>() else {
                return fail(format!("the number {literal} is too large"));
            };
            tokens.push(Token::Number(value));
            rest = &rest[end..];
        } else if c.is_alphabetic() || c == '_' {
            let end = rest
                .find(|ch: char| !(ch.is_alphanumeric() || ch == '_'))
                .unwrap_or(rest.len());
            tokens.push(Token::Name(rest[..end].to_string()));
            rest = &rest[end..];
        } else if let Some(op) = OPS.iter().find(|op| rest.starts_with(**op)) {
            tokens.push(Token::Op(op));
            rest = &rest[op.len()..];
        } else {
            return fail(format!("unexpected character {c:?} at position {position}"));
        }
    }
    if tokens.is_empty() {
        return fail("the formula is empty");
    }
    Ok(tokens)
}

/// Recursive descent with Python's precedence: `+ -` < `* /` < unary sign < `**` (right-assoc).
struct Parser<'a> {
    tokens: &'a [Token],
    at: usize,
    symbols: &'a [&'a str],
}

impl Parser<'_> {
    fn peek_op(&self) -> Option<&'static str> {
        match self.tokens.get(self.at) {
            Some(Token::Op(op)) => Some(op),
            _ => None,
        }
    }

    fn expression(&mut self) -> Parsed<Poly> {
        let mut acc = self.product()?;
        while let Some(op @ ("+" | "-")) = self.peek_op() {
            self.at += 1;
            let rhs = self.product()?;
            acc = if op == "+" {
                acc.add(&rhs)?
            } else {
                acc.add(&rhs.neg()?)?
            };
        }
        Ok(acc)
    }

    fn product(&mut self) -> Parsed<Poly> {
        let mut acc = self.unary()?;
        while let Some(op @ ("*" | "/")) = self.peek_op() {
            self.at += 1;
            let rhs = self.unary()?;
            acc = if op == "*" {
                acc.mul(&rhs)?
            } else {
                let Some(divisor) = rhs.as_constant() else {
                    return fail("division is only allowed by numbers");
                };
                if divisor.num == 0 {
                    return fail("division by zero");
                }
                acc.scale(divisor.recip())?
            };
        }
        Ok(acc)
    }

    fn unary(&mut self) -> Parsed<Poly> {
        match self.peek_op() {
            Some("-") => {
                self.at += 1;
                self.unary()?.neg()
            }
            Some("+") => {
                self.at += 1;
                self.unary()
            }
            _ => self.power(),
        }
    }

    fn power(&mut self) -> Parsed<Poly> {
        let base = self.atom()?;
        if let Some("**" | "^") = self.peek_op() {
            self.at += 1;
            let exponent = self.unary()?;
            let e = match exponent.as_constant() {
                Some(Rational { num, den: 1 }) if (0..=MAX_EXPONENT).contains(&num) => num as u32,
                _ => {
                    return fail(format!(
                        "exponents must be whole numbers from 0 to {MAX_EXPONENT}"
                    ))
                }
            };
            return base.pow(e);
        }
        Ok(base)
    }

    fn atom(&mut self) -> Parsed<Poly> {
        let token = self.tokens.get(self.at).cloned();
        self.at += 1;
        match token {
            Some(Token::Number(n)) => Ok(Poly::constant(Rational::whole(n), self.symbols.len())),
            Some(Token::Name(name)) => {
                let index = self
                    .symbols
                    .iter()
                    .position(|s| *s == name)
                    .ok_or_else(|| FormulaError(format!("undeclared symbols: {name}")))?;
                Ok(Poly::symbol(index, self.symbols.len()))
            }
            Some(Token::Op("(")) => {
                let inner = self.expression()?;
                match self.tokens.get(self.at) {
                    Some(Token::Op(")")) => {
                        self.at += 1;
                        Ok(inner)
                    }
                    _ => fail("a \"(\" is never closed"),
                }
            }
            Some(other) => fail(format!("unexpected {other}")),
            None => fail("the formula ends early"),
        }
    }
}

const MAX_EXPONENT: i128 = 16;

#[cfg(test)]
#[path = "formula_tests.rs"]
mod tests;
