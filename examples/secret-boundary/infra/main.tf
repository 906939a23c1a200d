# The platform team's infrastructure. In a real account the target group is an
# `aws_lb_target_group` next to its load balancer; here `terraform_data` stands in
# for it, so `tofu apply` needs no provider download and no AWS account.
resource "terraform_data" "target_group" {
  input = "arn:aws:elasticloadbalancing:us-east-1:123456789012:targetgroup/web/0123456789abcdef"
}

output "alb_target_group_arn" {
  value = terraform_data.target_group.output
}
