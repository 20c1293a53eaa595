// Declarations-only stand-in for gloo's header; see ../../README.md. Devices and buffers stay
// opaque: the shim only passes libtorch's shared pointers along.
#pragma once

namespace gloo {
namespace transport {

class Device;
class UnboundBuffer;

}  // namespace transport
}  // namespace gloo
