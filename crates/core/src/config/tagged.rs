//! Polymorphic configuration positions. serde's internally tagged enums buffer the whole object
//! before choosing a variant, which loses the config path of any error inside it. Ours read the
//! type key first (the TypeScript side always writes it first) and hand the rest of the very
//! same map to the variant, so errors keep their full path (`learner.trainer.hooks[0].margin`).

/// Declares a configuration enum whose variants are chosen by the [`super::TYPE_KEY`] entry.
macro_rules! config_enum {
    (
        $(#[$meta:meta])*
        pub enum $name:ident {
            $( $(#[$vmeta:meta])* $variant:ident($ty:ty) = $tag:literal, )+
        }
    ) => {
        $(#[$meta])*
        pub enum $name {
            $( $(#[$vmeta])* $variant($ty), )+
        }

        impl $name {
            /// The type ids this position accepts.
            pub const TYPE_IDS: &'static [&'static str] = &[$($tag),+];
        }

        impl<'de> serde::Deserialize<'de> for $name {
            fn deserialize<D: serde::Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
                struct Chooser;
                impl<'de> serde::de::Visitor<'de> for Chooser {
                    type Value = $name;

                    fn expecting(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
                        write!(f, "a configuration object whose first key is {:?}, one of {:?}",
                            $crate::config::TYPE_KEY, $name::TYPE_IDS)
                    }

                    fn visit_map<A: serde::de::MapAccess<'de>>(self, mut map: A) -> Result<$name, A::Error> {
                        use serde::de::Error as _;
                        let key: Option<String> = map.next_key()?;
                        if key.as_deref() != Some($crate::config::TYPE_KEY) {
                            return Err(A::Error::custom(format!(
                                "the first key of this object must be {:?} (one of {:?}), found {:?}",
                                $crate::config::TYPE_KEY, $name::TYPE_IDS, key.unwrap_or_default()
                            )));
                        }
                        let tag: String = map.next_value()?;
                        let rest = serde::de::value::MapAccessDeserializer::new(map);
                        match tag.as_str() {
                            $( $tag => <$ty as serde::Deserialize>::deserialize(rest).map($name::$variant), )+
                            other => Err(A::Error::unknown_variant(other, $name::TYPE_IDS)),
                        }
                    }
                }
                deserializer.deserialize_map(Chooser)
            }
        }
    };
}

pub(crate) use config_enum;
