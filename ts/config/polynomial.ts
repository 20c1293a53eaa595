/**
 * Exact polynomial arithmetic for expanding cost formulas: reduced fractions whose parts must
 * stay within 128-bit integers (beyond, the formula is rejected as "too large", as it always
 * was: the bound decides which formulas are valid, so it stays).
 */

const I128_MIN = -(1n << 127n);
const I128_MAX = (1n << 127n) - 1n;

/** Thrown when an intermediate number leaves the 128-bit range. */
export class TooLarge extends Error {}

function checked(n: bigint): bigint {
  if (n < I128_MIN || n > I128_MAX) throw new TooLarge();
  return n;
}

function gcd(a: bigint, b: bigint): bigint {
  let [x, y] = [a < 0n ? -a : a, b < 0n ? -b : b];
  while (y !== 0n) [x, y] = [y, x % y];
  return x;
}

/** An exact fraction, reduced, with a positive denominator. */
export class Rational {
  private constructor(
    readonly num: bigint,
    readonly den: bigint,
  ) {}

  static whole(n: bigint): Rational {
    return new Rational(n, 1n);
  }

  static of(num: bigint, den: bigint): Rational {
    const g = gcd(num, den);
    const divisor = g === 0n ? 1n : g;
    const sign = den < 0n ? -1n : 1n;
    return new Rational((sign * num) / divisor, (sign * den) / divisor);
  }

  recip(): Rational {
    return Rational.of(this.den, this.num);
  }

  add(o: Rational): Rational {
    const num = checked(checked(this.num * o.den) + checked(o.num * this.den));
    return Rational.of(num, checked(this.den * o.den));
  }

  mul(o: Rational): Rational {
    return Rational.of(checked(this.num * o.num), checked(this.den * o.den));
  }

  toString(): string {
    return this.den === 1n ? this.num.toString() : `${this.num}/${this.den}`;
  }
}

const keyOf = (exponents: readonly number[]) => exponents.join(",");

function compareExponents(a: readonly number[], b: readonly number[]): number {
  for (let i = 0; i < Math.min(a.length, b.length); i++) {
    const d = (a[i] ?? 0) - (b[i] ?? 0);
    if (d !== 0) return d;
  }
  return a.length - b.length;
}

/** A polynomial over a fixed list of symbols; zero terms are never stored. */
export class Polynomial {
  private readonly terms = new Map<string, { exponents: number[]; value: Rational }>();

  private constructor(private readonly nsym: number) {}

  static constant(value: Rational, nsym: number): Polynomial {
    const p = new Polynomial(nsym);
    if (value.num !== 0n) p.addTerm(new Array<number>(nsym).fill(0), value);
    return p;
  }

  static symbol(index: number, nsym: number): Polynomial {
    const exponents = new Array<number>(nsym).fill(0);
    exponents[index] = 1;
    const p = new Polynomial(nsym);
    p.addTerm(exponents, Rational.whole(1n));
    return p;
  }

  /** The value when the polynomial has no variable part. */
  asConstant(): Rational | undefined {
    const all = [...this.terms.values()];
    if (all.length === 0) return Rational.whole(0n);
    const [only] = all;
    if (all.length === 1 && only !== undefined && only.exponents.every((e) => e === 0)) return only.value;
    return undefined;
  }

  private addTerm(exponents: number[], value: Rational): void {
    const key = keyOf(exponents);
    const old = this.terms.get(key);
    const sum = old === undefined ? value : old.value.add(value);
    if (sum.num === 0n) this.terms.delete(key);
    else this.terms.set(key, { exponents, value: sum });
  }

  private ascending(): { exponents: number[]; value: Rational }[] {
    return [...this.terms.values()].sort((a, b) => compareExponents(a.exponents, b.exponents));
  }

  add(other: Polynomial): Polynomial {
    const out = this.copy();
    for (const t of other.ascending()) out.addTerm(t.exponents, t.value);
    return out;
  }

  scale(by: Rational): Polynomial {
    const out = new Polynomial(this.nsym);
    for (const t of this.ascending()) out.addTerm(t.exponents, t.value.mul(by));
    return out;
  }

  neg(): Polynomial {
    return this.scale(Rational.whole(-1n));
  }

  mul(other: Polynomial): Polynomial {
    const out = new Polynomial(this.nsym);
    for (const a of this.ascending()) {
      for (const b of other.ascending()) {
        out.addTerm(
          a.exponents.map((e, i) => e + (b.exponents[i] ?? 0)),
          a.value.mul(b.value),
        );
      }
    }
    return out;
  }

  pow(e: number): Polynomial {
    let out = Polynomial.constant(Rational.whole(1n), this.nsym);
    for (let i = 0; i < e; i++) out = out.mul(this);
    return out;
  }

  /** Terms by exponent tuple, descending (symbols in declaration order). */
  termsDescending(): [number[], Rational][] {
    return this.ascending()
      .reverse()
      .map((t) => [t.exponents, t.value]);
  }

  private copy(): Polynomial {
    const out = new Polynomial(this.nsym);
    for (const [k, v] of this.terms) out.terms.set(k, v);
    return out;
  }
}
