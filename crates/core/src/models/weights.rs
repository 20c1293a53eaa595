//! Loading safetensors weights saved under PyTorch's names into a whole model ([`load_weights`])
//! or into the part a loader names ([`load_from_loader`]); names and shapes must match exactly.

use std::path::Path;

use super::safetensors_file::SafetensorsFile;
use super::{Model, NamedParameter};
use crate::{Error, Result};

/// Loads weights saved under PyTorch's names (a `state_dict` written with
/// `safetensors.torch.save_file`, or a `model/model.safetensors` of ours) into `model`: every
/// parameter must be in the file with its shape, and every tensor of the file must be a
/// parameter. Tensors are converted to each parameter's dtype and device.
///
/// # Errors
/// [`Error::Checkpoint`] naming the file and the tensor: unknown or missing names, shape
/// mismatches, an unreadable file; a libtorch error while copying.
pub fn load_weights(model: &dyn Model, path: &Path) -> Result<()> {
    load_into(model.named_parameters(), path)
}

/// Loads the weights file of `loader` (a trained Learner's output or a checkpoint's model)
/// into the part of `model`, built from `config`, that the loader's model is: the model
/// itself, the model a SigmoidOutput wraps, or an entry of a MultipleModel. `path` names the
/// loader in errors. Returns the prefix of the names of the parameters it loaded (`""` for the
/// whole model, `"<entry>."` for an entry of a MultipleModel).
///
/// # Errors
/// [`Error::Config`] when the loader's model is no part of `config`; [`Error::Checkpoint`]
/// naming the loader, the file and the tensors when names or shapes differ.
pub fn load_from_loader(
    model: &dyn Model,
    config: &crate::config::AnyModule,
    loader: &crate::config::SimpleModuleLoaderConfig,
    path: &str,
) -> Result<String> {
    let prefix = config.prefix_of(&loader.value).ok_or_else(|| {
        Error::config(
            format!("{path}.value"),
            "is not the learner's model (nor the model it wraps, nor an entry of its \
             MultipleModel): give the loader the very model the Learner trains",
        )
    })?;
    let params = model
        .named_parameters()
        .into_iter()
        .filter_map(|p| {
            let name = p.name.strip_prefix(&prefix)?.to_string();
            Some(NamedParameter {
                name,
                tensor: p.tensor,
            })
        })
        .collect();
    load_into(params, Path::new(&loader.path)).map_err(|e| match e {
        Error::Checkpoint { what, message } => {
            Error::checkpoint(format!("{path}: {what}"), message)
        }
        other => other,
    })?;
    Ok(prefix)
}

/// Loads a safetensors file into `params`, which it must match exactly (names and shapes).
fn load_into(params: Vec<NamedParameter>, path: &Path) -> Result<()> {
    let what = path.display().to_string();
    if !path.is_file() {
        return Err(Error::checkpoint(
            &what,
            "no such file: give the model.safetensors of a run (or a checkpoint's model/ folder)",
        ));
    }
    // Read one tensor at a time: the model and one tensor are in memory, never the whole file.
    let saved = SafetensorsFile::open(path)
        .map_err(|e| Error::checkpoint(&what, format!("not a readable safetensors file: {e}")))?;
    let missing: Vec<&str> = params
        .iter()
        .filter(|p| !saved.contains(&p.name))
        .map(|p| p.name.as_str())
        .collect();
    if !missing.is_empty() {
        return Err(Error::checkpoint(
            &what,
            format!(
                "the file lacks the model's parameters {missing:?}; it holds {:?} \
                 (was it saved from another architecture?)",
                saved.names().collect::<Vec<_>>()
            ),
        ));
    }
    let unknown: Vec<&String> = saved
        .names()
        .filter(|name| !params.iter().any(|p| &p.name == *name))
        .collect();
    if !unknown.is_empty() {
        return Err(Error::checkpoint(
            &what,
            format!("the model has no parameters named {unknown:?}"),
        ));
    }
    for p in &params {
        let shape = saved.shape(&p.name).unwrap_or_default();
        if shape != p.tensor.size() {
            return Err(Error::checkpoint(
                &what,
                format!(
                    "tensor {:?} has shape {shape:?} but the model's parameter has shape {:?}",
                    p.name,
                    p.tensor.size()
                ),
            ));
        }
    }
    let _no_grad = tch::no_grad_guard();
    // A shared parameter appears under two names: the file holds it under both, and it is
    // copied twice, from equal tensors.
    for p in &params {
        let source = saved
            .read(&p.name)
            .map_err(|e| Error::checkpoint(&what, e))?;
        let converted = source
            .f_to_device(p.tensor.device())?
            .f_to_kind(p.tensor.kind())?;
        p.tensor.shallow_clone().f_copy_(&converted)?;
    }
    Ok(())
}
