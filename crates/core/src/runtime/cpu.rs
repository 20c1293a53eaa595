//! What the CPU offers bfloat16: the instructions that make it native ([`cpu_bf16_features`]).
//! Without them libtorch emulates bfloat16 arithmetic, and mixed precision on the CPU runs
//! slower than float32 (PyTorch issues #86270, #118499).

use std::collections::HashSet;
use std::sync::OnceLock;

/// The features, as `/proc/cpuinfo` names them, that make bfloat16 arithmetic native:
/// AVX512-BF16 and AMX-BF16 on x86-64, BF16 on Arm (ARMv8.6).
const NATIVE_BF16_FEATURES: [&str; 3] = ["avx512_bf16", "amx_bf16", "bf16"];

/// The native-bfloat16 features among the first processor's of a `/proc/cpuinfo` text (its
/// `flags` line on x86, `Features` on Arm); empty when it has none.
pub fn bf16_features_in(cpuinfo: &str) -> Vec<&'static str> {
    let line = cpuinfo.lines().find_map(|line| {
        let (key, value) = line.split_once(':')?;
        matches!(key.trim(), "flags" | "Features").then_some(value)
    });
    let present: HashSet<&str> = line.unwrap_or("").split_whitespace().collect();
    NATIVE_BF16_FEATURES
        .into_iter()
        .filter(|feature| present.contains(feature))
        .collect()
}

/// This machine's native-bfloat16 CPU features, read once from `/proc/cpuinfo` (empty where it
/// cannot be read: then bfloat16 is taken for emulated).
pub fn cpu_bf16_features() -> &'static [&'static str] {
    static FEATURES: OnceLock<Vec<&'static str>> = OnceLock::new();
    FEATURES.get_or_init(|| {
        std::fs::read_to_string("/proc/cpuinfo")
            .map(|text| bf16_features_in(&text))
            .unwrap_or_default()
    })
}

/// Whether this machine's CPU computes bfloat16 natively (see [`cpu_bf16_features`]).
pub fn native_cpu_bf16() -> bool {
    !cpu_bf16_features().is_empty()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn x86_flags_name_the_native_bf16_instructions() {
        let epyc = "processor\t: 0\nflags\t\t: fpu sse2 avx2 avx512f avx512_bf16 avx512vl\nbugs\t\t: none\n";
        assert_eq!(bf16_features_in(epyc), ["avx512_bf16"]);
        let sapphire = "flags : avx512f avx512_bf16 amx_bf16 amx_tile\n";
        assert_eq!(bf16_features_in(sapphire), ["avx512_bf16", "amx_bf16"]);
    }

    #[test]
    fn a_cpu_without_them_has_none() {
        let skylake = "processor\t: 0\nflags\t\t: fpu sse2 avx2 avx512f avx512bw\n";
        assert!(bf16_features_in(skylake).is_empty());
        assert!(bf16_features_in("").is_empty());
        // Only the flags line counts: a model name that mentions bf16 is not a feature.
        assert!(bf16_features_in("model name : bf16 engine\nflags : sse2\n").is_empty());
    }

    #[test]
    fn arm_features_name_bf16() {
        let neoverse = "processor\t: 0\nFeatures\t: fp asimd sve bf16 i8mm\n";
        assert_eq!(bf16_features_in(neoverse), ["bf16"]);
    }
}
