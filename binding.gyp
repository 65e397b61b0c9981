{
  # The CUDA backend's native layer (cuda/addon/). It links no CUDA library: libcuda and libnvrtc
  # are opened at run time, so this builds and loads on machines without CUDA.
  'targets': [
    {
      'target_name': 'foxhunt_cuda',
      'sources': ['cuda/addon/addon.cc', 'cuda/addon/loader.cc'],
      'dependencies': ["<!(node -p \"require('node-addon-api').targets\"):node_addon_api_except"],
      'defines': ['NAPI_VERSION=8', 'NODE_ADDON_API_DISABLE_DEPRECATED'],
      'cflags_cc': ['-std=c++17', '-Wall', '-Wextra'],
      'libraries': ['-ldl'],
    },
  ],
}
