"builtin.module"() ({
  "func.func"() <{function_type = (tensor<?x2xf32, #graph.dims<[s0, 2]>>) -> tensor<?x3xf32, #graph.dims<[s0, 3]>>, sym_name = "main"}> ({
  ^bb0(%arg0: tensor<?x2xf32, #graph.dims<[s0, 2]>>):
    %0 = "graph.constant"() <{value = dense<[[1.000000e+00, 2.000000e+00], [3.000000e+00, 4.000000e+00], [5.000000e+00, 6.000000e+00]]> : tensor<3x2xf32>}> : () -> tensor<3x2xf32>
    %1 = "graph.transpose"(%0) <{perm = [1, 0]}> : (tensor<3x2xf32>) -> tensor<2x3xf32>
    %2 = "graph.matmul"(%arg0, %1) : (tensor<?x2xf32, #graph.dims<[s0, 2]>>, tensor<2x3xf32>) -> tensor<?x3xf32, #graph.dims<[s0, 3]>>
    %3 = "graph.constant"() <{value = dense<[5.000000e-01, -1.000000e+01, 1.000000e+00]> : tensor<3xf32>}> : () -> tensor<3xf32>
    %4 = "graph.add"(%2, %3) : (tensor<?x3xf32, #graph.dims<[s0, 3]>>, tensor<3xf32>) -> tensor<?x3xf32, #graph.dims<[s0, 3]>>
    %5 = "graph.relu"(%4) : (tensor<?x3xf32, #graph.dims<[s0, 3]>>) -> tensor<?x3xf32, #graph.dims<[s0, 3]>>
    "func.return"(%5) : (tensor<?x3xf32, #graph.dims<[s0, 3]>>) -> ()
  }) : () -> ()
}) : () -> ()
